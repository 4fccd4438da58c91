// Package parentbased is the OpenTelemetry tracer's sampler
// envoy.tracers.opentelemetry.samplers.parent_based: a span that continues
// an incoming trace context follows that context's sampled flag, and a
// root span is decided by the wrapped sampler.
package parentbased

import (
	"errors"
	"fmt"

	samplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
)

// Name is the sampler's name in Outrigger's spelling.
const Name = "proxy.tracers.opentelemetry.samplers.parent_based"

// Factory builds the sampler and the one it wraps.
type Factory struct{}

// Compile implements opentelemetry.SamplerFactory; wrapped_sampler is
// found in reg.
func (Factory) Compile(config proto.Message, reg *extension.Registry) (opentelemetry.Sampler, error) {
	cfg, ok := config.(*samplersv3.ParentBasedSamplerConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	if cfg.GetWrappedSampler() == nil {
		return nil, errors.New("wrapped_sampler: must be set")
	}
	w, err := opentelemetry.CompileSampler(cfg.GetWrappedSampler(), reg)
	if err != nil {
		return nil, fmt.Errorf("wrapped_sampler.%w", err)
	}
	return sampler{wrapped: w}, nil
}

// sampler follows the parent, else asks the wrapped sampler.
type sampler struct {
	wrapped opentelemetry.Sampler
}

// Sample implements opentelemetry.Sampler.
func (s sampler) Sample(p opentelemetry.SamplingParams) opentelemetry.SamplingResult {
	if !p.Parent {
		return s.wrapped.Sample(p)
	}
	return opentelemetry.SamplingResult{Sampled: p.ParentSampled, TraceState: p.ParentTraceState}
}
