package opentelemetry

import (
	"strings"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
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

// TestRequestDecodesAroundOneByteLengths checks attributes whose lengths
// are on either side of 128 bytes, where a length takes a second byte.
func TestRequestDecodesAroundOneByteLengths(t *testing.T) {
	var spans []*tracing.Span
	for n := 110; n < 135; n++ {
		s := tracing.NewSpan(nil, nil)
		s.Trace, s.ID = tracing.NewTraceID(false), tracing.NewSpanID()
		s.SetTag("k", strings.Repeat("v", n))
		s.SetTag(strings.Repeat("k", n), "v")
		spans = append(spans, s)
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal((&encoder{}).appendRequest(nil, nil, spans), &req); err != nil {
		t.Fatal(err)
	}
	got := req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()
	if len(got) != len(spans) {
		t.Fatalf("%d spans, want %d", len(got), len(spans))
	}
	for i, s := range got {
		n := 110 + i
		a := s.GetAttributes()
		if len(a) != 2 || a[0].GetKey() != "k" || len(a[0].GetValue().GetStringValue()) != n ||
			len(a[1].GetKey()) != n || a[1].GetValue().GetStringValue() != "v" {
			t.Errorf("span %d: attributes = %v", i, a)
		}
	}
}

// BenchmarkAppendRequest encodes a batch of five spans with the tags of a
// proxied request.
func BenchmarkAppendRequest(b *testing.B) {
	var pool tracing.SpanPool
	spans := make([]*tracing.Span, 5)
	for i := range spans {
		s := pool.Get(nil, w3c{})
		s.Trace, s.ID, s.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "ingress"
		s.Start, s.End = time.Unix(10, 5), time.Unix(11, 7)
		for _, kv := range [][2]string{
			{"node_id", "node-1"}, {"zone", "zone-a"}, {"guid:x-request-id", "8f0e4a36-2c4d-4b5e-9a1f-3d2c1b0a9f8e"},
			{"http.url", "http://127.0.0.1:10000/"}, {"http.method", "GET"}, {"downstream_cluster", "-"},
			{"user_agent", "wrk"}, {"http.protocol", "HTTP/1.1"}, {"peer.address", "127.0.0.1"},
			{"request_size", "0"}, {"response_size", "128"}, {"component", "proxy"},
			{"upstream_cluster", "up"}, {"upstream_cluster.name", "up"}, {"http.status_code", "200"},
			{"response_flags", "-"},
		} {
			s.SetTag(kv[0], kv[1])
		}
		spans[i] = s
	}
	res := []tracing.Tag{{Key: "service.name", Value: "edge"}}
	var (
		e   encoder
		buf []byte
	)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.appendRequest(buf[:0], res, spans)
	}
}

// TestSpanSizeFollowsTags: the size a span's encoding announces is the
// size written, as tags are added, replaced by longer and shorter values,
// and when one is long or has an empty key (the running sums' fallback).
func TestSpanSizeFollowsTags(t *testing.T) {
	check := func(what string, s *tracing.Span) {
		t.Helper()
		size := spanSize(s)
		b := appendSpan(nil, s, size)
		if want := 1 + protowire.SizeVarint(uint64(size)) + size; len(b) != want {
			t.Errorf("%s: %d bytes written, the size announces %d", what, len(b), want)
		}
	}
	s := tracing.NewSpan(nil, w3c{})
	s.Trace, s.ID, s.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "ingress"
	check("no tags", s)
	s.AddTag("http.method", "GET")
	s.AddConstTag("component", "proxy")
	check("added", s)
	s.SetTag("http.method", "OPTIONS")
	check("replaced by a longer value", s)
	s.SetTag("component", "")
	check("replaced by an empty value", s)
	s.SetTag("http.url", strings.Repeat("u", 200))
	check("a long value", s)
	s.SetTag("http.url", "short")
	check("the long value replaced", s)
	s.AddConstTag("", "v")
	check("an empty key", s)
}
