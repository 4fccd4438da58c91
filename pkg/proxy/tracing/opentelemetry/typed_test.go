package opentelemetry

import (
	"math"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestTypedTags checks the typed attributes of CustomTag.value_type as
// the generated OTLP messages decode them, in both encodings, a prepared
// run included: a value that parses is exported as its type, one that
// does not as its string, and the last type set for a key wins.
func TestTypedTags(t *testing.T) {
	d := &driver{}
	prepared := tracing.PrepareTags(d, tracing.Tag{Key: "component", Value: "proxy"}, tracing.Tag{Key: "node_id", Value: "n1"})
	var pool tracing.SpanPool
	s := pool.Get(nil, w3c{})
	s.Trace, s.ID, s.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "ingress"
	s.Start, s.End = time.Unix(10, 5), time.Unix(11, 7)
	s.AddPreparedTags(prepared)
	s.SetTypedTag("retries", " 42 ", tracing.IntValue)
	s.SetTypedTag("negative", "-7", tracing.IntValue)
	s.SetTypedTag("ratio", "1.5", tracing.DoubleValue)
	s.SetTypedTag("cached", "Yes", tracing.BoolValue)
	s.SetTypedTag("off", "f", tracing.BoolValue)
	s.SetTypedTag("bad", "forty", tracing.IntValue)
	s.SetTypedTag("retyped", "3", tracing.IntValue)
	s.SetTypedTag("retyped", "3", tracing.StringValue)
	s.SetTag("plain", "x")
	want := map[string]*commonpb.AnyValue{
		"component": {Value: &commonpb.AnyValue_StringValue{StringValue: "proxy"}},
		"node_id":   {Value: &commonpb.AnyValue_StringValue{StringValue: "n1"}},
		"retries":   {Value: &commonpb.AnyValue_IntValue{IntValue: 42}},
		"negative":  {Value: &commonpb.AnyValue_IntValue{IntValue: -7}},
		"ratio":     {Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1.5}},
		"cached":    {Value: &commonpb.AnyValue_BoolValue{BoolValue: true}},
		"off":       {Value: &commonpb.AnyValue_BoolValue{BoolValue: false}},
		"bad":       {Value: &commonpb.AnyValue_StringValue{StringValue: "forty"}},
		"retyped":   {Value: &commonpb.AnyValue_StringValue{StringValue: "3"}},
		"plain":     {Value: &commonpb.AnyValue_StringValue{StringValue: "x"}},
	}
	for name, b := range map[string][]byte{
		"at export": (&encoder{}).appendRequest(nil, requestHead{}, []*tracing.Span{s}),
		"at finish": appendEncodedRequest(nil, requestHead{}, encodeSpan(nil, s)),
	} {
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		attrs := req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0].GetAttributes()
		if len(attrs) != len(want) {
			t.Fatalf("%s: %d attributes, want %d: %v", name, len(attrs), len(want), attrs)
		}
		for _, a := range attrs {
			if !proto.Equal(a.GetValue(), want[a.GetKey()]) {
				t.Errorf("%s: %s = %v, want %v", name, a.GetKey(), a.GetValue(), want[a.GetKey()])
			}
		}
	}
}

// TestTypedValueParsing checks the coercions against absl's spellings.
func TestTypedValueParsing(t *testing.T) {
	for _, c := range []struct {
		v    string
		t    tracing.ValueType
		ok   bool
		bits uint64
	}{
		{"+5", tracing.IntValue, true, 5},
		{"9223372036854775808", tracing.IntValue, false, 0},
		{"1e3", tracing.IntValue, false, 0},
		{"1e3", tracing.DoubleValue, true, math.Float64bits(1000)},
		{"nan", tracing.DoubleValue, true, math.Float64bits(math.NaN())},
		{"", tracing.DoubleValue, false, 0},
		{"TRUE", tracing.BoolValue, true, 1},
		{"N", tracing.BoolValue, true, 0},
		{"2", tracing.BoolValue, false, 0},
		{"anything", tracing.StringValue, false, 0},
	} {
		_, bits, ok := typedValue(c.v, c.t)
		if ok != c.ok || ok && bits != c.bits {
			t.Errorf("typedValue(%q, %d) = %x, %v; want %x, %v", c.v, c.t, bits, ok, c.bits, c.ok)
		}
	}
}
