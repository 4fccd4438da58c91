package zipkin

import (
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestW3CFallbackExtraction checks USE_B3_WITH_W3C_PROPAGATION's reading
// of a request: B3 wins when present, a valid traceparent is the context
// of a request without B3, an invalid one starts a new trace, and without
// the option a traceparent is ignored.
func TestW3CFallbackExtraction(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	w3c := &driver{shared: true, w3c: true}
	b3only := &driver{shared: true}
	start := tracing.StartOptions{Host: "svc", Start: time.Now()}

	s := w3c.StartSpan(headers{"Traceparent": {tp}}, start)
	if s == nil || s.Trace.Hex() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.ID.Hex() != "00f067aa0ba902b7" || !s.Shared || !s.Sampled {
		t.Errorf("span from a traceparent = %+v", s)
	}
	s = w3c.StartSpan(headers{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}}, tracing.StartOptions{Traced: true})
	if s == nil || s.Sampled {
		t.Errorf("the traceparent's flag 00 did not decide the sampling: %+v", s)
	}
	in := headers{"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}, "X-B3-Sampled": {"0"}, "Traceparent": {tp}}
	s = w3c.StartSpan(in, start)
	if s == nil || s.ID.Hex() != "a2fb4a1d1a96d312" || s.Sampled {
		t.Errorf("B3 did not win over the traceparent: %+v", s)
	}
	s = w3c.StartSpan(headers{"B3": {"1"}, "Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}}, start)
	if s == nil || s.Trace.Hex() != "4bf92f3577b34da6a3ce929d0e0e4736" || !s.Sampled {
		t.Errorf("a b3 sampling decision with a traceparent: %+v", s)
	}
	for _, bad := range []string{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "garbage"} {
		s = w3c.StartSpan(headers{"Traceparent": {bad}}, tracing.StartOptions{Traced: true})
		if s == nil || !s.Parent.IsZero() || s.Trace.Hex() == "4bf92f3577b34da6a3ce929d0e0e4736" || !s.Sampled {
			t.Errorf("traceparent %q: span = %+v, want a new sampled root", bad, s)
		}
	}
	s = b3only.StartSpan(headers{"Traceparent": {tp}}, tracing.StartOptions{Traced: false})
	if s == nil || s.Trace.Hex() == "4bf92f3577b34da6a3ce929d0e0e4736" || s.Sampled {
		t.Errorf("USE_B3 read the traceparent: %+v", s)
	}
}

// TestW3CDualInjection checks that USE_B3_WITH_W3C_PROPAGATION writes the
// B3 headers and a traceparent naming the same span, for 128-bit and
// 64-bit trace ids, and that USE_B3 writes no traceparent.
func TestW3CDualInjection(t *testing.T) {
	w3c := &driver{shared: true, w3c: true}
	in := headers{"X-B3-Traceid": {"463ac35c9f6413ad48485a3953bb6124"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}, "X-B3-Sampled": {"1"}}
	s := w3c.StartSpan(in, tracing.StartOptions{Host: "svc", Egress: true, Start: time.Now()})
	out := headers{}
	s.Inject(out)
	if v, _ := out.Get("x-b3-traceid"); v != "463ac35c9f6413ad48485a3953bb6124" {
		t.Errorf("x-b3-traceid = %q", v)
	}
	want := "00-463ac35c9f6413ad48485a3953bb6124-" + s.ID.Hex() + "-01"
	if v, _ := out.Get("traceparent"); v != want {
		t.Errorf("traceparent = %q, want %q", v, want)
	}
	// Injected again (a retry): the same values, the views intact.
	out2 := headers{}
	s.Inject(out2)
	if v, _ := out2.Get("traceparent"); v != want {
		t.Errorf("traceparent on the second injection = %q", v)
	}
	if v, _ := out.Get("x-b3-spanid"); v != s.ID.Hex() {
		t.Errorf("x-b3-spanid after a second injection = %q", v)
	}

	root := w3c.StartSpan(headers{}, tracing.StartOptions{Traced: false})
	out = headers{}
	root.Inject(out)
	if v, _ := out.Get("traceparent"); v != "00-0000000000000000"+traceIDHex(root.Trace)+"-"+root.ID.Hex()+"-00" {
		t.Errorf("traceparent of a 64-bit trace = %q (trace %s)", v, traceIDHex(root.Trace))
	}
	child := root.Child("router up egress", time.Now())
	out = headers{}
	child.Inject(out)
	if v, _ := out.Get("traceparent"); v != "00-0000000000000000"+traceIDHex(root.Trace)+"-"+child.ID.Hex()+"-00" {
		t.Errorf("child's traceparent = %q", v)
	}

	b3only := &driver{shared: true}
	s = b3only.StartSpan(in, tracing.StartOptions{Start: time.Now()})
	out = headers{}
	s.Inject(out)
	if _, ok := out.Get("traceparent"); ok {
		t.Error("USE_B3 wrote a traceparent")
	}
}

// TestSpanKindWithUpstreamSpans checks Envoy's span kinds: on an egress
// listener the request's span is the client's, unless the proxy is a hop
// of its own (spawn_upstream_span or split_spans_for_request): then it is
// the server's, sharing the client's span id under shared_span_context.
func TestSpanKindWithUpstreamSpans(t *testing.T) {
	in := headers{"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}, "X-B3-Sampled": {"1"}}
	for _, c := range []struct {
		name   string
		d      *driver
		spawn  bool
		server bool
	}{
		{"egress", &driver{shared: true}, false, false},
		{"egress, spawn_upstream_span", &driver{shared: true}, true, true},
		{"egress, split_spans_for_request", &driver{shared: true, split: true}, false, true},
	} {
		for _, h := range []headers{in, {}} {
			s := c.d.StartSpan(h, tracing.StartOptions{Host: "svc", Egress: true, Spawn: c.spawn, Traced: true, Start: time.Now()})
			if got := s.Kind != tracing.Client; got != c.server {
				t.Errorf("%s (%d headers): server span = %v, want %v", c.name, len(h), got, c.server)
			}
			if len(h) > 0 && c.server != s.Shared {
				t.Errorf("%s: shared = %v, want %v (the client's span id taken)", c.name, s.Shared, c.server)
			}
		}
	}
}
