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
	if err := proto.Unmarshal((&encoder{}).appendRequest(nil, requestHead{resource: res}, []*tracing.Span{root, child}), &req); err != nil {
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
	if err := proto.Unmarshal((&encoder{}).appendRequest(nil, requestHead{}, spans), &req); err != nil {
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

// TestRequestDecodesAroundSpanLengths checks spans whose size or name
// length are on either side of the varint lengths appendSpan writes
// inline: a size below 128, between 128 and 16,383, and above, names
// around 128 bytes.
func TestRequestDecodesAroundSpanLengths(t *testing.T) {
	var spans []*tracing.Span
	add := func(name string, value int) {
		s := tracing.NewSpan(nil, nil)
		s.Trace, s.ID, s.Name = tracing.NewTraceID(false), tracing.NewSpanID(), name
		if value >= 0 {
			s.SetTag("k", strings.Repeat("v", value))
		}
		spans = append(spans, s)
	}
	for n := 120; n < 136; n++ {
		add(strings.Repeat("n", n), -1)
	}
	add("", -1)
	add("ingress", -1)
	for v := 16300; v < 16400; v += 7 {
		add("ingress", v)
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal((&encoder{}).appendRequest(nil, requestHead{}, spans), &req); err != nil {
		t.Fatal(err)
	}
	got := req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()
	if len(got) != len(spans) {
		t.Fatalf("%d spans, want %d", len(got), len(spans))
	}
	sizes := map[int]bool{}
	for i, g := range got {
		s := spans[i]
		n := spanSize(s)
		sizes[protowire.SizeVarint(uint64(n))] = true
		if g.GetName() != s.Name || string(g.GetSpanId()) != string(s.ID[:]) {
			t.Errorf("span %d (size %d): name %q, id %x", i, n, g.GetName(), g.GetSpanId())
		}
		if v, ok := s.Tag("k"); ok && (len(g.GetAttributes()) != 1 || g.GetAttributes()[0].GetValue().GetStringValue() != v) {
			t.Errorf("span %d (size %d): attributes of %d bytes lost", i, n, len(v))
		}
	}
	// The sizes take one, two and three bytes.
	if len(sizes) != 3 {
		t.Errorf("span sizes of %v varint bytes, want 1, 2 and 3", sizes)
	}
}

// requestTags are the tags of a proxied request's span, in groups: those
// of the groups marked constant are the ones a connection manager adds
// prepared (tracing.PrepareTags).
var requestTags = []struct {
	tags     [][2]string
	constant bool
}{
	{[][2]string{{"node_id", "node-1"}, {"zone", "zone-a"}}, true},
	{[][2]string{{"guid:x-request-id", "8f0e4a36-2c4d-4b5e-9a1f-3d2c1b0a9f8e"}, {"http.url", "http://127.0.0.1:10000/"},
		{"http.method", "GET"}, {"downstream_cluster", "-"}, {"user_agent", "wrk"}}, false},
	{[][2]string{{"http.protocol", "HTTP/1.1"}}, false},
	{[][2]string{{"peer.address", "127.0.0.1"}, {"request_size", "0"}, {"response_size", "128"}}, false},
	{[][2]string{{"component", "proxy"}, {"upstream_cluster", "up"}, {"upstream_cluster.name", "up"}}, true},
	{[][2]string{{"http.status_code", "200"}, {"response_flags", "-"}}, false},
}

// requestSpans returns five spans with requestTags, the constant ones
// prepared when prepared.
func requestSpans(prepared bool) []*tracing.Span {
	var pool tracing.SpanPool
	d := &driver{}
	var groups []*tracing.PreparedTags
	for _, g := range requestTags {
		var tags []tracing.Tag
		for _, kv := range g.tags {
			tags = append(tags, tracing.Tag{Key: kv[0], Value: kv[1]})
		}
		groups = append(groups, tracing.PrepareTags(d, tags...))
	}
	spans := make([]*tracing.Span, 5)
	for i := range spans {
		s := pool.Get(nil, w3c{})
		s.Trace, s.ID, s.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "ingress"
		s.Start, s.End = time.Unix(10, 5), time.Unix(11, 7)
		for j, g := range requestTags {
			if prepared && g.constant {
				s.AddPreparedTags(groups[j])
				continue
			}
			for _, kv := range g.tags {
				s.SetTag(kv[0], kv[1])
			}
		}
		spans[i] = s
	}
	return spans
}

// BenchmarkAppendRequest encodes a batch of five spans with the tags of a
// proxied request.
func BenchmarkAppendRequest(b *testing.B) {
	benchmarkAppendRequest(b, requestSpans(false))
}

// BenchmarkAppendRequestPrepared is BenchmarkAppendRequest with the six
// constant tags prepared, as a connection manager adds them: each is
// copied, not encoded.
func BenchmarkAppendRequestPrepared(b *testing.B) {
	benchmarkAppendRequest(b, requestSpans(true))
}

func benchmarkAppendRequest(b *testing.B, spans []*tracing.Span) {
	res := []tracing.Tag{{Key: "service.name", Value: "edge"}}
	var (
		e   encoder
		buf []byte
	)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.appendRequest(buf[:0], requestHead{resource: res}, spans)
	}
}

// TestPreparedTagsEncodeAsTags: a span's prepared tags encode to the
// bytes of the same tags added as values, in runs at the start, middle
// and end of its tags, beside long and empty ones, and a prepared tag
// replaced by SetTag encodes its new value.
func TestPreparedTagsEncodeAsTags(t *testing.T) {
	plain, prepared := requestSpans(false), requestSpans(true)
	d := &driver{}
	for i, extra := range []tracing.Tag{
		{Key: "long", Value: strings.Repeat("v", 300)},
		{Key: "empty", Value: ""},
		{Key: "", Value: "no key"},
	} {
		plain[i].AddConstTag(extra.Key, extra.Value)
		plain[i].AddConstTag("after", "v")
		prepared[i].AddPreparedTags(tracing.PrepareTags(d, extra, tracing.Tag{Key: "after", Value: "v"}))
	}
	plain[3].SetTag("upstream_cluster", "replaced")
	prepared[3].SetTag("upstream_cluster", "replaced")
	var e encoder
	for i := range plain {
		prepared[i].Trace, prepared[i].ID = plain[i].Trace, plain[i].ID
		want := e.appendRequest(nil, requestHead{}, plain[i:i+1])
		got := e.appendRequest(nil, requestHead{}, prepared[i:i+1])
		if string(got) != string(want) {
			t.Errorf("span %d: prepared tags encode as\n%x, want\n%x", i, got, want)
		}
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(got, &req); err != nil {
			t.Fatalf("span %d: %v", i, err)
		}
	}
	if v, _ := prepared[3].Tag("upstream_cluster"); v != "replaced" {
		t.Errorf("replaced tag = %q", v)
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

// joinedSpans is a tracing.EncodedReporter that joins what it is given.
type joinedSpans struct{ enc []byte }

func (j *joinedSpans) ReportEncoded(e tracing.SpanEncoder, s *tracing.Span) {
	j.enc = e.AppendSpan(j.enc, s)
}

// TestEncodedRequestMatchesRequest: spans encoded as they finish
// (tracing.SpanEncoder), then joined into an export request, give the
// bytes of the same spans encoded at export (appendRequest): prepared
// runs, long and empty tags, a tag without a key, a parent and a
// tracestate, resources or none, one span or several.
func TestEncodedRequestMatchesRequest(t *testing.T) {
	d := &driver{}
	var joined joinedSpans
	d.pool.EncodeAtFinish(d, &joined)
	spans := requestSpans(true)
	for i, extra := range []tracing.Tag{
		{Key: "long", Value: strings.Repeat("v", 300)},
		{Key: "empty", Value: ""},
		{Key: "", Value: "no key"},
	} {
		spans[i].SetTag(extra.Key, extra.Value)
	}
	spans[4].Parent, spans[4].TraceState, spans[4].Kind = tracing.NewSpanID(), "k=v", tracing.Client
	// The same spans from the driver's pool, which encodes them at
	// finish, sampled and reported.
	var local tracing.Span
	for i, s := range spans {
		f := d.pool.Local(&local, &batcherStub{}, w3c{})
		f.Borrow()
		f.Trace, f.ID, f.Parent, f.TraceState, f.Kind = s.Trace, s.ID, s.Parent, s.TraceState, s.Kind
		f.Name, f.Start, f.Sampled = s.Name, s.Start, true
		for _, tag := range s.Tags {
			f.SetTag(tag.Key, tag.Value)
		}
		if i == 0 {
			// A run of prepared tags, as the connection manager adds.
			f.AddPreparedTags(tracing.PrepareTags(d, tracing.Tag{Key: "node_id", Value: "n"}))
			s.AddPreparedTags(tracing.PrepareTags(d, tracing.Tag{Key: "node_id", Value: "n"}))
		}
		f.Finish(s.End)
	}
	var e encoder
	for _, res := range [][]tracing.Tag{nil, {{Key: "service.name", Value: "edge"}}} {
		want := e.appendRequest(nil, requestHead{resource: res}, spans)
		got := appendEncodedRequest(nil, requestHead{resource: res}, joined.enc)
		if string(got) != string(want) {
			t.Errorf("resource %v: spans encoded at finish give\n%x, want\n%x", res, got, want)
		}
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(got, &req); err != nil {
			t.Fatal(err)
		}
		if n := len(req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()); n != len(spans) {
			t.Errorf("%d spans decoded, want %d", n, len(spans))
		}
	}
	one := encodeSpan(nil, spans[2])
	if got, want := appendEncodedRequest(nil, requestHead{}, one), e.appendRequest(nil, requestHead{}, spans[2:3]); string(got) != string(want) {
		t.Errorf("one span encoded at finish gives\n%x, want\n%x", got, want)
	}
}

// batcherStub is a Reporter that must not be called: spans encoded at
// finish go to the pool's EncodedReporter.
type batcherStub struct{}

func (batcherStub) Report(*tracing.Span) { panic("a span encoded at finish was reported as a span") }
