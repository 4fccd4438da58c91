package opentelemetry

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// The extension categories of the tracer's own extension points.
const (
	ResourceDetectorCategory = "envoy.tracers.opentelemetry.resource_detectors"
	SamplerCategory          = "envoy.tracers.opentelemetry.samplers"
)

// ResourceDetector is a resource detector extension: it detects resource
// attributes once, when the tracer is configured, as Envoy's do.
type ResourceDetector interface {
	// Detect returns the attributes detected with config (the
	// detector's typed_config). Errors name the field below it.
	Detect(config proto.Message) ([]tracing.Tag, error)
}

// SamplerFactory builds a sampler extension from its typed_config; reg
// holds the samplers a sampler may wrap.
type SamplerFactory interface {
	Compile(config proto.Message, reg *extension.Registry) (Sampler, error)
}

// Sampler decides whether the spans the tracer starts are sampled,
// replacing the connection manager's decision (and an incoming context's
// flag), as Envoy's samplers do.
type Sampler interface {
	Sample(p SamplingParams) SamplingResult
}

// SamplingParams is what a sampler knows of the span it decides for.
type SamplingParams struct {
	// Parent is set when the span continues an incoming trace context,
	// whose sampled flag and tracestate follow.
	Parent           bool
	ParentSampled    bool
	ParentTraceState string
	Trace            tracing.TraceID
	Name             string
	Kind             tracing.Kind
}

// SamplingResult is a sampler's decision and the tracestate the span
// carries on.
type SamplingResult struct {
	Sampled    bool
	TraceState string
}

// resolve finds the extension of category a TypedExtensionConfig names.
// Errors name the field below it.
func resolve(reg *extension.Registry, kind, category string, tc *corev3.TypedExtensionConfig) (extension.Extension, proto.Message, error) {
	return reg.Resolve(extension.Ref{Kind: kind, Category: category, Name: tc.GetName(), Config: tc.GetTypedConfig()}, false)
}

// DetectResource merges the attributes of the resource detectors into
// res, in order, a later value replacing an earlier one of the same key
// (service.name included), as Envoy merges resources.
func DetectResource(res []tracing.Tag, cfgs []*corev3.TypedExtensionConfig, reg *extension.Registry) ([]tracing.Tag, error) {
	for i, tc := range cfgs {
		ext, msg, err := resolve(reg, "resource detector", ResourceDetectorCategory, tc)
		if err != nil {
			return nil, fmt.Errorf("resource_detectors[%d].%w", i, err)
		}
		d, ok := ext.Factory.(ResourceDetector)
		if !ok {
			return nil, fmt.Errorf("resource_detectors[%d].typed_config: extension %q is not a resource detector", i, ext.Name)
		}
		attrs, err := d.Detect(msg)
		if err != nil {
			return nil, fmt.Errorf("resource_detectors[%d].typed_config.%w", i, err)
		}
		for _, a := range attrs {
			res = setAttribute(res, a)
		}
	}
	return res, nil
}

// setAttribute sets a in attrs, replacing the value of its key.
func setAttribute(attrs []tracing.Tag, a tracing.Tag) []tracing.Tag {
	for i := range attrs {
		if attrs[i].Key == a.Key {
			attrs[i].Value = a.Value
			return attrs
		}
	}
	return append(attrs, a)
}

// CompileSampler builds the sampler a TypedExtensionConfig names (the
// tracer's sampler, or one a sampler wraps); errors name the field below
// it.
func CompileSampler(tc *corev3.TypedExtensionConfig, reg *extension.Registry) (Sampler, error) {
	ext, msg, err := resolve(reg, "sampler", SamplerCategory, tc)
	if err != nil {
		return nil, err
	}
	f, ok := ext.Factory.(SamplerFactory)
	if !ok {
		return nil, fmt.Errorf("typed_config: extension %q is not a sampler", ext.Name)
	}
	s, err := f.Compile(msg, reg)
	if err != nil {
		return nil, fmt.Errorf("typed_config.%w", err)
	}
	return s, nil
}
