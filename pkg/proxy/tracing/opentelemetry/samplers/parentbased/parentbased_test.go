package parentbased

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	samplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry/samplers/alwayson"
)

func TestSample(t *testing.T) {
	reg, err := extension.New(
		extension.Of(alwayson.Name, opentelemetry.SamplerCategory, &samplersv3.AlwaysOnSamplerConfig{}, alwayson.Factory{}),
		extension.Of(Name, opentelemetry.SamplerCategory, &samplersv3.ParentBasedSamplerConfig{}, Factory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := anypb.New(&samplersv3.AlwaysOnSamplerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Factory{}.Compile(&samplersv3.ParentBasedSamplerConfig{
		WrappedSampler: &corev3.TypedExtensionConfig{Name: "envoy.tracers.opentelemetry.samplers.always_on", TypedConfig: wrapped},
	}, reg)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		p    opentelemetry.SamplingParams
		want opentelemetry.SamplingResult
	}{
		"root: the wrapped sampler decides": {p: opentelemetry.SamplingParams{}, want: opentelemetry.SamplingResult{Sampled: true}},
		"sampled parent":                    {p: opentelemetry.SamplingParams{Parent: true, ParentSampled: true, ParentTraceState: "a=1"}, want: opentelemetry.SamplingResult{Sampled: true, TraceState: "a=1"}},
		"unsampled parent":                  {p: opentelemetry.SamplingParams{Parent: true, ParentTraceState: "a=1"}, want: opentelemetry.SamplingResult{TraceState: "a=1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := s.Sample(tc.p); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}

	errs := map[string]struct {
		cfg  *samplersv3.ParentBasedSamplerConfig
		want string
	}{
		"no wrapped sampler": {cfg: &samplersv3.ParentBasedSamplerConfig{}, want: "wrapped_sampler: must be set"},
		"unknown wrapped sampler": {cfg: &samplersv3.ParentBasedSamplerConfig{WrappedSampler: &corev3.TypedExtensionConfig{
			Name: "x", TypedConfig: func() *anypb.Any { a, _ := anypb.New(&samplersv3.DynatraceSamplerConfig{}); return a }(),
		}}, want: "wrapped_sampler.typed_config: sampler type envoy.extensions.tracers.opentelemetry.samplers.v3.DynatraceSamplerConfig is not supported by Outrigger"},
	}
	for name, tc := range errs {
		t.Run(name, func(t *testing.T) {
			if _, err := (Factory{}).Compile(tc.cfg, reg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := (Factory{}).Compile(&emptypb.Empty{}, reg); err == nil {
		t.Error("a configuration of another type was accepted")
	}
}
