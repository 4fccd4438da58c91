package opentelemetry

import (
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestRequestDecodes checks the hand-written encoding against the
// generated OTLP messages.
func TestRequestDecodes(t *testing.T) {
	var pool tracing.SpanPool
	root := pool.Get(nil, w3c{})
	root.Trace, root.ID, root.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "ingress"
	root.Start, root.End = time.Unix(10, 5), time.Unix(11, 7)
	root.TraceState = "v=1"
	root.SetTag("component", "proxy")
	root.SetTag("empty", "")
	root.SetTag("long", string(make([]byte, 300)))
	child := root.Child("router up egress", time.Unix(10, 6))
	child.End = time.Unix(10, 9)
	res := []tracing.Tag{{Key: "service.name", Value: "edge"}}

	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal((&encoder{}).appendRequest(nil, res, []*tracing.Span{root, child}), &req); err != nil {
		t.Fatal(err)
	}
	rs := req.GetResourceSpans()
	if len(rs) != 1 || rs[0].GetResource().GetAttributes()[0].GetValue().GetStringValue() != "edge" {
		t.Fatalf("resource spans = %v", rs)
	}
	spans := rs[0].GetScopeSpans()[0].GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	r, c := spans[0], spans[1]
	if string(r.GetTraceId()) != string(root.Trace[:]) || string(r.GetSpanId()) != string(root.ID[:]) || r.GetParentSpanId() != nil {
		t.Errorf("root ids = %x %x %x", r.GetTraceId(), r.GetSpanId(), r.GetParentSpanId())
	}
	if r.GetName() != "ingress" || r.GetKind() != tracepb.Span_SPAN_KIND_SERVER || r.GetTraceState() != "v=1" ||
		r.GetStartTimeUnixNano() != uint64(time.Unix(10, 5).UnixNano()) || r.GetEndTimeUnixNano() != uint64(time.Unix(11, 7).UnixNano()) {
		t.Errorf("root = %v", r)
	}
	attrs := r.GetAttributes()
	if len(attrs) != 3 || attrs[0].GetKey() != "component" || attrs[0].GetValue().GetStringValue() != "proxy" || len(attrs[2].GetValue().GetStringValue()) != 300 {
		t.Errorf("attributes = %v", attrs)
	}
	if c.GetKind() != tracepb.Span_SPAN_KIND_CLIENT || string(c.GetParentSpanId()) != string(root.ID[:]) || c.GetName() != "router up egress" {
		t.Errorf("child = %v", c)
	}
}
