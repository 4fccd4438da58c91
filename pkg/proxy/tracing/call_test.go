package tracing

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// idPropagator writes a span's ids the way a W3C propagator would, enough
// to tell which span a call carries.
type idPropagator struct{}

func (idPropagator) Inject(s *Span, h HeaderSetter) {
	flags := "00"
	if s.Sampled {
		flags = "01"
	}
	h.Set("traceparent", "00-"+s.Trace.Hex()+"-"+s.ID.Hex()+"-"+flags)
}

// parentSpan is a request's span with a fresh context.
func parentSpan(rec *recorder, sampled bool) *Span {
	p := NewSpan(rec, idPropagator{})
	p.Trace, p.ID, p.Sampled = NewTraceID(false), NewSpanID(), sampled
	return p
}

// TestCallSpanEmitted: the call's span is a client child of the request's,
// named after the method, tagged as Envoy's asynchronous client tags it,
// carried in the call's metadata, and finished with the call's status.
func TestCallSpanEmitted(t *testing.T) {
	var rec recorder
	parent := parentSpan(&rec, true)
	start := time.Now()
	c := StartCallSpan(parent, true, "/envoy.service.auth.v3.Authorization/Check", "authz", "authz.local", start)
	md := c.Metadata()
	c.SetTag("ext_authz_status", "ext_authz_ok")
	c.Finish(nil, start.Add(time.Millisecond))
	c.Finish(status.Error(codes.Internal, "late"), start) // ended already: no-op
	c.Cancel(start)
	if len(rec.spans) != 1 {
		t.Fatalf("reported %d spans, want 1", len(rec.spans))
	}
	sp := rec.spans[0]
	if sp.Name != "async envoy.service.auth.v3.Authorization.Check egress" || sp.Kind != Client ||
		sp.Trace != parent.Trace || sp.Parent != parent.ID || sp.ID == parent.ID {
		t.Errorf("span %q kind %d trace %s parent %s id %s", sp.Name, sp.Kind, sp.Trace.Hex(), sp.Parent.Hex(), sp.ID.Hex())
	}
	for k, want := range map[string]string{
		"upstream_cluster": "authz", "upstream_address": "authz.local", "component": "proxy",
		"grpc.status_code": "0", "ext_authz_status": "ext_authz_ok",
	} {
		if v, _ := sp.Tag(k); v != want {
			t.Errorf("tag %s = %q, want %q", k, v, want)
		}
	}
	if _, ok := sp.Tag("error"); ok {
		t.Error("an OK call is tagged error")
	}
	want := "00-" + parent.Trace.Hex() + "-" + sp.ID.Hex() + "-01"
	if got := md.Get("traceparent"); len(got) != 1 || got[0] != want {
		t.Errorf("metadata traceparent %v, want %s", got, want)
	}
}

// TestCallSpanOutcomes: a failed call records its gRPC status and error;
// a cancelled one status=canceled and no status code.
func TestCallSpanOutcomes(t *testing.T) {
	var rec recorder
	parent := parentSpan(&rec, true)
	c := StartCallSpan(parent, true, "/envoy.service.ext_proc.v3.ExternalProcessor/Process", "proc", "proc", time.Now())
	c.Finish(status.Error(codes.Unavailable, "down"), time.Now())
	c = StartCallSpan(parent, true, "/envoy.service.ext_proc.v3.ExternalProcessor/Process", "proc", "proc", time.Now())
	c.Cancel(time.Now())
	if len(rec.spans) != 2 {
		t.Fatalf("reported %d spans, want 2", len(rec.spans))
	}
	failed, cancelled := rec.spans[0], rec.spans[1]
	if failed.Name != "async envoy.service.ext_proc.v3.ExternalProcessor.Process egress" {
		t.Errorf("name %q", failed.Name)
	}
	if v, _ := failed.Tag("grpc.status_code"); v != "14" {
		t.Errorf("grpc.status_code %q, want 14", v)
	}
	if v, _ := failed.Tag("error"); v != "true" {
		t.Errorf("error %q, want true", v)
	}
	if v, _ := cancelled.Tag("status"); v != "canceled" {
		t.Errorf("status %q, want canceled", v)
	}
	if _, ok := cancelled.Tag("grpc.status_code"); ok {
		t.Error("a cancelled call has a gRPC status")
	}
	// A context error is a failure like another when not the caller's.
	c = StartCallSpan(parent, true, "/a.B/C", "x", "x", time.Now())
	c.Finish(status.FromContextError(context.DeadlineExceeded).Err(), time.Now())
	if v, _ := rec.spans[2].Tag("grpc.status_code"); v != "4" {
		t.Errorf("deadline: grpc.status_code %q, want 4", v)
	}
}

// TestCallSpanNotEmitted: without emit_client_span no span is reported
// and the call carries the request span's own context.
func TestCallSpanNotEmitted(t *testing.T) {
	var rec recorder
	parent := parentSpan(&rec, true)
	c := StartCallSpan(parent, false, "/a.B/C", "x", "x", time.Now())
	c.SetTag("k", "v")
	c.Finish(nil, time.Now())
	if len(rec.spans) != 0 {
		t.Fatalf("reported %d spans, want none", len(rec.spans))
	}
	want := "00-" + parent.Trace.Hex() + "-" + parent.ID.Hex() + "-01"
	if got := c.Metadata().Get("traceparent"); len(got) != 1 || got[0] != want {
		t.Errorf("metadata traceparent %v, want %s", got, want)
	}
}

// TestCallSpanUnsampled: an unsampled request's call has an unsampled
// child, never reported, whose context still goes to the service.
func TestCallSpanUnsampled(t *testing.T) {
	var rec recorder
	parent := parentSpan(&rec, false)
	c := StartCallSpan(parent, true, "/a.B/C", "x", "x", time.Now())
	got := c.Metadata().Get("traceparent")
	c.Finish(nil, time.Now())
	if len(rec.spans) != 0 {
		t.Fatal("an unsampled call span was reported")
	}
	if len(got) != 1 || got[0][len(got[0])-2:] != "00" || got[0][36:52] == parent.ID.Hex() {
		t.Errorf("traceparent %v: want a child's context, not sampled", got)
	}
}

// TestCallSpanUntraced: an untraced request's call has nothing.
func TestCallSpanUntraced(t *testing.T) {
	c := StartCallSpan(nil, true, "/a.B/C", "x", "x", time.Now())
	if c != nil || c.Metadata() != nil {
		t.Fatal("an untraced call has a span")
	}
	c.SetTag("k", "v")
	c.Finish(nil, time.Now())
	c.Cancel(time.Now())
}
