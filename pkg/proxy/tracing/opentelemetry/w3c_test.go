package opentelemetry

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// headers adapts http.Header to tracing's header interfaces.
type headers http.Header

func (h headers) Get(n string) (string, bool) {
	v, ok := h[http.CanonicalHeaderKey(n)]
	if !ok {
		return "", false
	}
	return v[0], true
}
func (h headers) Set(n, v string) { http.Header(h).Set(n, v) }
func (h headers) Del(n string)    { http.Header(h).Del(n) }

func TestExtract(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name, value string
		ok, sampled bool
	}{
		{"sampled", good, true, true},
		{"not sampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true, false},
		{"other flags keep the sampled bit", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", true, true},
		{"upper case", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false, false},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, false},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", false, false},
		{"zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false, false},
		{"short", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", false, false},
		{"bad separators", "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, false},
		{"not hex", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, found, err := extract(headers{"Traceparent": {c.value}, "Tracestate": {"a=b"}})
			if !found {
				t.Fatalf("extract(%q) found no traceparent", c.value)
			}
			if (err == nil) != c.ok {
				t.Fatalf("extract(%q) error = %v, want ok %v", c.value, err, c.ok)
			}
			if c.ok && (p.sampled != c.sampled || p.state != "a=b" || p.trace.Hex() != "4bf92f3577b34da6a3ce929d0e0e4736" || p.span.Hex() != "00f067aa0ba902b7") {
				t.Errorf("extract(%q) = %+v", c.value, p)
			}
		})
	}
	if _, found, err := extract(headers{}); found || err != nil {
		t.Errorf("no traceparent: found %v, error %v; want neither", found, err)
	}
}

func TestStartSpanAndInject(t *testing.T) {
	d := &driver{}
	start := time.Unix(100, 0)

	// No context: a root span sampled by the decision.
	s := d.StartSpan(headers{}, tracing.StartOptions{Operation: "ingress", Start: start, Traced: true})
	if s == nil || !s.Sampled || !s.Parent.IsZero() || s.Trace.IsZero() || s.ID.IsZero() || s.Name != "ingress" || s.Kind != tracing.Server {
		t.Fatalf("root span = %+v", s)
	}
	out := headers{"Tracestate": {"stale=1"}}
	s.Inject(out)
	want := "00-" + s.Trace.Hex() + "-" + s.ID.Hex() + "-01"
	if got, _ := out.Get("traceparent"); got != want {
		t.Errorf("traceparent = %q, want %q", got, want)
	}
	if _, ok := out.Get("tracestate"); ok {
		t.Error("a stale tracestate was left in place")
	}

	// A context: a child that keeps the parent's sampling, whatever the
	// decision, and passes tracestate on.
	in := headers{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}, "Tracestate": {"v=1"}}
	c := d.StartSpan(in, tracing.StartOptions{Operation: "egress h", Egress: true, Start: start, Traced: true})
	if c.Sampled || c.Parent.Hex() != "00f067aa0ba902b7" || c.Trace.Hex() != "4bf92f3577b34da6a3ce929d0e0e4736" || c.Kind != tracing.Client {
		t.Fatalf("child span = %+v", c)
	}
	// With upstream spans of its own (spawn_upstream_span), the request's
	// span is the server's on an egress listener too.
	if sc := d.StartSpan(in, tracing.StartOptions{Operation: "egress h", Egress: true, Spawn: true, Start: start, Traced: true}); sc.Kind == tracing.Client {
		t.Errorf("egress span with spawn_upstream_span = %+v, want a server span", sc)
	}
	out = headers{}
	c.Inject(out)
	if got, _ := out.Get("traceparent"); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-"+c.ID.Hex()+"-00" {
		t.Errorf("traceparent = %q", got)
	}
	if got, _ := out.Get("tracestate"); got != "v=1" {
		t.Errorf("tracestate = %q", got)
	}

	// An unreadable context: no span at all.
	if s := d.StartSpan(headers{"Traceparent": {"garbage"}}, tracing.StartOptions{Traced: true}); s != nil {
		t.Errorf("span from an invalid traceparent = %+v, want none", s)
	}
}

// benchHeaders is a request's headers as a list, as the connection
// manager keeps them.
type benchHeaders struct{ kv [][2]string }

func (h *benchHeaders) Get(n string) (string, bool) {
	for _, f := range h.kv {
		if f[0] == n {
			return f[1], true
		}
	}
	return "", false
}

func (h *benchHeaders) Set(n, v string) {
	for i := range h.kv {
		if h.kv[i][0] == n {
			h.kv[i][1] = v
			return
		}
	}
	h.kv = append(h.kv, [2]string{n, v})
}

func (h *benchHeaders) Del(n string) {
	for i := range h.kv {
		if h.kv[i][0] == n {
			h.kv = append(h.kv[:i], h.kv[i+1:]...)
			return
		}
	}
}

// BenchmarkUnsampledRequest is what the tracer costs a request that is
// not sampled: its span started, its context propagated (traceparent with
// the sampled flag off, as Envoy's tracer does) and the span finished.
func BenchmarkUnsampledRequest(b *testing.B) {
	d := &driver{}
	h := &benchHeaders{kv: [][2]string{{":authority", "h"}, {"user-agent", "wrk"}, {"x-request-id", "8f0e4a36-2c4d-4b5e-9a1f-3d2c1b0a9f8e"}}}
	base := len(h.kv)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		h.kv = h.kv[:base]
		s := d.StartSpan(h, tracing.StartOptions{Operation: "ingress", Start: now})
		s.Inject(h)
		s.Finish(now)
	}
}

func (h *benchHeaders) SetDel(set, v, del string) {
	h.Set(set, v)
	h.Del(del)
}

// TestStartContextMatchesStartSpan: for every kind of incoming context and
// decision, StartContext declines exactly when StartSpan's span would be
// sampled, and otherwise propagates what that span would: the same trace,
// a fresh span id, the parent's tracestate, the sampled flag off; an
// unreadable context propagates nothing, as StartSpan's nil span.
func TestStartContextMatchesStartSpan(t *testing.T) {
	const (
		unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
		sampled   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	)
	d := &driver{}
	cases := []struct {
		name string
		in   headers
	}{
		{"no context", headers{}},
		{"unsampled parent", headers{"Traceparent": {unsampled}}},
		{"unsampled parent with tracestate", headers{"Traceparent": {unsampled}, "Tracestate": {"v=1"}}},
		{"sampled parent", headers{"Traceparent": {sampled}, "Tracestate": {"v=1"}}},
		{"unreadable context", headers{"Traceparent": {"garbage"}}},
	}
	for _, c := range cases {
		for _, traced := range []bool{false, true} {
			var sc tracing.SpanContext
			ok := d.StartContext(c.in, traced, &sc)
			span := d.StartSpan(c.in, tracing.StartOptions{Operation: "ingress", Traced: traced})
			if want := span == nil || !span.Sampled; ok != want {
				t.Fatalf("%s, traced %v: StartContext %v, want %v (span %+v)", c.name, traced, ok, want, span)
			}
			if !ok {
				continue
			}
			if sc.Valid != (span != nil) {
				t.Fatalf("%s, traced %v: context valid %v, span %+v", c.name, traced, sc.Valid, span)
			}
			if span == nil {
				continue
			}
			got := headers{"Tracestate": {"stale=1"}}
			d.InjectContext(&sc, (*setDelHeaders)(&got))
			want := headers{"Tracestate": {"stale=1"}}
			span.ID = sc.ID
			if c.in["Traceparent"] == nil {
				span.Trace = sc.Trace
			}
			span.Inject(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, traced %v: the context injects %v, the span %v", c.name, traced, got, want)
			}
			// Traceparent is InjectContext's field for a request without
			// W3C fields, when it writes that field alone.
			tp, alone := d.Traceparent(&sc)
			if alone != (sc.TraceState == "") {
				t.Errorf("%s, traced %v: Traceparent alone %v with tracestate %q", c.name, traced, alone, sc.TraceState)
			}
			fresh := headers{}
			d.InjectContext(&sc, (*setDelHeaders)(&fresh))
			if want := (headers{"Traceparent": {tp}}); alone && !reflect.DeepEqual(fresh, want) {
				t.Errorf("%s, traced %v: InjectContext writes %v, Traceparent %q", c.name, traced, fresh, tp)
			}
			if sc.ID.IsZero() || sc.Trace.IsZero() || sc.Parent != span.Parent {
				t.Errorf("%s, traced %v: context %+v, span %+v", c.name, traced, sc, span)
			}
		}
	}
	// A sampler decides with the span: StartContext declines.
	ds := &driver{sampler: alwaysOff{}}
	var sc tracing.SpanContext
	if ds.StartContext(headers{}, false, &sc) {
		t.Error("StartContext took a request a sampler decides")
	}
}

// setDelHeaders adds SetDel to headers.
type setDelHeaders headers

func (h *setDelHeaders) Set(n, v string) { headers(*h).Set(n, v) }
func (h *setDelHeaders) Del(n string)    { headers(*h).Del(n) }
func (h *setDelHeaders) SetDel(set, v, del string) {
	h.Set(set, v)
	h.Del(del)
}

// alwaysOff samples nothing.
type alwaysOff struct{}

func (alwaysOff) Sample(SamplingParams) SamplingResult { return SamplingResult{} }

// BenchmarkUnsampledContext is what the tracer costs a request that is
// not sampled when the connection manager keeps its span as a bare
// context (tracing.ContextDriver): BenchmarkUnsampledRequest's work
// without the span.
func BenchmarkUnsampledContext(b *testing.B) {
	d := &driver{}
	h := &benchHeaders{kv: [][2]string{{":authority", "h"}, {"user-agent", "wrk"}, {"x-request-id", "8f0e4a36-2c4d-4b5e-9a1f-3d2c1b0a9f8e"}}}
	base := len(h.kv)
	var c tracing.SpanContext
	b.ReportAllocs()
	for b.Loop() {
		h.kv = h.kv[:base]
		if !d.StartContext(h, false, &c) {
			b.Fatal("an unsampled request's context not started")
		}
		d.InjectContext(&c, h)
	}
}

// TestUnsampledContextAllocatesNothing: an unsampled request's context,
// started and injected, allocates nothing once its buffer exists.
func TestUnsampledContextAllocatesNothing(t *testing.T) {
	d := &driver{}
	h := &benchHeaders{kv: [][2]string{{"x-request-id", "8f0e4a36-2c4d-4b5e-9a1f-3d2c1b0a9f8e"}}}
	var c tracing.SpanContext
	run := func() {
		h.kv = h.kv[:1]
		d.StartContext(h, false, &c)
		d.InjectContext(&c, h)
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per unsampled request", n)
	}
}

// TestContextTraceparentRewritesIDs: a stream's context, started and
// injected request after request, writes only the ids over the last
// traceparent (contextTraceparent); each value is the one written afresh,
// through Traceparent and InjectContext alike.
func TestContextTraceparentRewritesIDs(t *testing.T) {
	d := &driver{}
	var c tracing.SpanContext
	for i := range 200 {
		if i%3 == 2 {
			c.StartChild(tracing.TraceID{byte(i), 1}, tracing.SpanID{byte(i), 2}, "")
		} else {
			c.StartRoot()
		}
		want := string(putTraceparent(nil, &c.Trace, &c.ID, false))
		var got string
		if i%2 == 0 {
			got, _ = d.Traceparent(&c)
		} else {
			h := headers{}
			d.InjectContext(&c, (*setDelHeaders)(&h))
			got, _ = h.Get("Traceparent")
		}
		if got != want {
			t.Fatalf("request %d: traceparent %q, want %q", i, got, want)
		}
	}
}

// TestSpanTraceparentMatchesInject: the traceparent SpanTraceparent gives
// a span, sampled or not, is what its Inject writes into a request with no
// W3C fields, when that field is all it writes.
func TestSpanTraceparentMatchesInject(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0"
	d := &driver{}
	for _, in := range []headers{
		{},
		{"Traceparent": {parent + "0"}},
		{"Traceparent": {parent + "1"}},
		{"Traceparent": {parent + "1"}, "Tracestate": {"v=1"}},
	} {
		for _, traced := range []bool{false, true} {
			span := d.StartSpan(in, tracing.StartOptions{Operation: "ingress", Traced: traced})
			if span == nil {
				t.Fatalf("%v: no span", in)
			}
			tp, alone := d.SpanTraceparent(span)
			if alone != (span.TraceState == "") {
				t.Errorf("%v, traced %v: alone %v with tracestate %q", in, traced, alone, span.TraceState)
			}
			want := headers{}
			span.Inject(want)
			if alone && !reflect.DeepEqual(want, headers{"Traceparent": {tp}}) {
				t.Errorf("%v, traced %v: Inject writes %v, SpanTraceparent %q", in, traced, want, tp)
			}
		}
	}
}
