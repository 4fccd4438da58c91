package opentelemetry

import (
	"testing"
	"time"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestResourceDefaults checks the resource's attributes under each of
// Envoy's switches: service.name and telemetry.sdk.* by default, each
// left out when its switch is false.
func TestResourceDefaults(t *testing.T) {
	off := wrapperspb.Bool(false)
	for _, c := range []struct {
		name string
		cfg  *tracev3.OpenTelemetryConfig
		want []string
	}{
		{"defaults", &tracev3.OpenTelemetryConfig{}, []string{
			"service.name=unknown_service:envoy", "telemetry.sdk.language=go", "telemetry.sdk.name=envoy", "telemetry.sdk.version=v1"}},
		{"named", &tracev3.OpenTelemetryConfig{ServiceName: "edge", SetTelemetrySdkResourceAttributes: wrapperspb.Bool(true)}, []string{
			"service.name=edge", "telemetry.sdk.language=go", "telemetry.sdk.name=envoy", "telemetry.sdk.version=v1"}},
		{"no sdk", &tracev3.OpenTelemetryConfig{ServiceName: "edge", SetTelemetrySdkResourceAttributes: off}, []string{"service.name=edge"}},
		{"no service name", &tracev3.OpenTelemetryConfig{SetServiceNameResourceAttribute: off}, []string{
			"telemetry.sdk.language=go", "telemetry.sdk.name=envoy", "telemetry.sdk.version=v1"}},
		{"neither", &tracev3.OpenTelemetryConfig{SetServiceNameResourceAttribute: off, SetTelemetrySdkResourceAttributes: off}, nil},
	} {
		var got []string
		for _, a := range resource(c.cfg, "v1") {
			got = append(got, a.Key+"="+a.Value)
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: resource = %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: resource = %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// TestInstrumentationScope checks that both encodings of a request carry
// the scope Envoy names its spans with, and none when it is switched off,
// as the generated OTLP messages decode them.
func TestInstrumentationScope(t *testing.T) {
	var pool tracing.SpanPool
	s := pool.Get(nil, w3c{})
	s.Trace, s.ID, s.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "ingress"
	s.Start, s.End = time.Unix(10, 5), time.Unix(11, 7)
	res := []tracing.Tag{{Key: "service.name", Value: "edge"}}
	for _, c := range []struct {
		head          requestHead
		name, version string
	}{
		{newRequestHead(res, true, "envoy", "abc/0.1.0/Clean/RELEASE/BoringSSL"), "envoy", "abc/0.1.0/Clean/RELEASE/BoringSSL"},
		{newRequestHead(res, true, "envoy", ""), "envoy", ""},
		{newRequestHead(res, false, "envoy", "v1"), "", ""},
	} {
		for _, b := range [][]byte{
			(&encoder{}).appendRequest(nil, c.head, []*tracing.Span{s, s}),
			appendEncodedRequest(nil, c.head, append(encodeSpan(nil, s), encodeSpan(nil, s)...)),
		} {
			var req collectorpb.ExportTraceServiceRequest
			if err := proto.Unmarshal(b, &req); err != nil {
				t.Fatal(err)
			}
			ss := req.GetResourceSpans()[0].GetScopeSpans()[0]
			if (c.name == "") != (ss.GetScope() == nil) || ss.GetScope().GetName() != c.name || ss.GetScope().GetVersion() != c.version {
				t.Errorf("scope = %v, want name %q version %q", ss.GetScope(), c.name, c.version)
			}
			if len(ss.GetSpans()) != 2 || ss.GetSpans()[1].GetName() != "ingress" {
				t.Errorf("spans = %v", ss.GetSpans())
			}
			if a := req.GetResourceSpans()[0].GetResource().GetAttributes(); len(a) != 1 || a[0].GetValue().GetStringValue() != "edge" {
				t.Errorf("resource = %v", a)
			}
		}
	}
}
