// Package alwayson is the OpenTelemetry tracer's sampler
// envoy.tracers.opentelemetry.samplers.always_on: every span is sampled,
// whatever the connection manager decided and whatever an incoming trace
// context says, and a continued context keeps its tracestate.
package alwayson

import (
	"fmt"

	samplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
)

// Name is the sampler's name in Outrigger's spelling.
const Name = "proxy.tracers.opentelemetry.samplers.always_on"

// Factory builds the sampler; its configuration is empty.
type Factory struct{}

// Compile implements opentelemetry.SamplerFactory.
func (Factory) Compile(config proto.Message, _ *extension.Registry) (opentelemetry.Sampler, error) {
	if _, ok := config.(*samplersv3.AlwaysOnSamplerConfig); !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	return sampler{}, nil
}

// sampler samples everything.
type sampler struct{}

// Sample implements opentelemetry.Sampler.
func (sampler) Sample(p opentelemetry.SamplingParams) opentelemetry.SamplingResult {
	return opentelemetry.SamplingResult{Sampled: true, TraceState: p.ParentTraceState}
}
