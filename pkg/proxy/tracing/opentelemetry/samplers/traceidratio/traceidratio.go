// Package traceidratio is the OpenTelemetry tracer's sampler
// envoy.tracers.opentelemetry.samplers.trace_id_ratio_based: a span is
// sampled when its trace id falls in sampling_percentage, so that every
// proxy with the same percentage samples the same traces.
package traceidratio

import (
	"encoding/binary"
	"fmt"

	samplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
)

// Name is the sampler's name in Outrigger's spelling.
const Name = "proxy.tracers.opentelemetry.samplers.trace_id_ratio_based"

// Factory builds the sampler.
type Factory struct{}

// Compile implements opentelemetry.SamplerFactory.
func (Factory) Compile(config proto.Message, _ *extension.Registry) (opentelemetry.Sampler, error) {
	cfg, ok := config.(*samplersv3.TraceIdRatioBasedSamplerConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	p := cfg.GetSamplingPercentage()
	den := uint64(100)
	switch p.GetDenominator() {
	case typev3.FractionalPercent_TEN_THOUSAND:
		den = 10000
	case typev3.FractionalPercent_MILLION:
		den = 1000000
	}
	return sampler{num: uint64(p.GetNumerator()), den: den}, nil
}

// sampler samples num in den trace ids.
type sampler struct {
	num, den uint64
}

// Sample implements opentelemetry.Sampler as Envoy's sampler decides: the
// first 8 bytes of the trace id, read as Envoy reads them on the
// little-endian machines it runs on, modulo the denominator, below the
// numerator. A continued context keeps its tracestate.
func (s sampler) Sample(p opentelemetry.SamplingParams) opentelemetry.SamplingResult {
	r := opentelemetry.SamplingResult{TraceState: p.ParentTraceState}
	if s.num == 0 {
		return r
	}
	r.Sampled = binary.LittleEndian.Uint64(p.Trace[:8])%s.den < s.num
	return r
}
