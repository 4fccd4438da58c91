// Package opentelemetry is the OpenTelemetry tracer
// (envoy.tracers.opentelemetry): W3C Trace Context propagation, and spans
// exported in OTLP batches to a collector over gRPC (TraceService/Export)
// or HTTP (a protobuf POST, usually to /v1/traces).
package opentelemetry

import (
	"errors"
	"fmt"
	"strings"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// Name is the tracer's name in the proxy. spelling.
const Name = "proxy.tracers.opentelemetry"

// defaultServiceName is Envoy's service.name when service_name is unset.
const defaultServiceName = "unknown_service:envoy"

// sdkName is the telemetry.sdk.name resource attribute and the
// instrumentation scope's name: Envoy's, whose tracer this is.
const sdkName = "envoy"

// sdkLanguage is the telemetry.sdk.language resource attribute: Envoy
// says "cpp"; Outrigger's tracer is written in Go.
const sdkLanguage = "go"

// defaultMaxCacheSize is Envoy's max_cache_size default: the spans kept
// while the collector is unavailable.
const defaultMaxCacheSize = 1024

// Factory builds the tracer.
type Factory struct{}

// Compile implements tracing.Factory.
func (Factory) Compile(config proto.Message, ctx tracing.Context) (tracing.Driver, error) {
	cfg, ok := config.(*tracev3.OpenTelemetryConfig)
	if !ok {
		return nil, errors.New("not an OpenTelemetryConfig")
	}
	switch {
	case cfg.GetExporter() != nil:
		return nil, errors.New("exporter: not supported by Outrigger (use grpc_service or http_service)")
	case cfg.GetGrpcService() != nil && cfg.GetHttpService() != nil:
		return nil, errors.New("grpc_service: only one of grpc_service and http_service may be set")
	}
	d := &driver{}
	res, err := DetectResource(resource(cfg, ctx.Version), cfg.GetResourceDetectors(), ctx.Extensions)
	if err != nil {
		return nil, err
	}
	setScope := cfg.GetSetInstrumentationScope() == nil || cfg.GetSetInstrumentationScope().GetValue()
	head := newRequestHead(res, setScope, sdkName, ctx.Version)
	if cfg.GetSampler() != nil {
		if d.sampler, err = CompileSampler(cfg.GetSampler(), ctx.Extensions); err != nil {
			return nil, fmt.Errorf("sampler.%w", err)
		}
	}
	maxSpans := defaultMaxCacheSize
	if v := cfg.GetMaxCacheSize(); v != nil {
		maxSpans = int(v.GetValue())
	}
	var (
		exp    tracing.Exporter
		target string
	)
	switch {
	case cfg.GetGrpcService() != nil:
		exp, target, err = newGRPCExporter(cfg.GetGrpcService(), head, ctx)
		if err != nil {
			return nil, fmt.Errorf("grpc_service.%w", err)
		}
	case cfg.GetHttpService() != nil:
		exp, target, err = newHTTPExporter(cfg.GetHttpService(), head, ctx)
		if err != nil {
			return nil, fmt.Errorf("http_service.%w", err)
		}
	}
	if exp != nil {
		if maxSpans == 0 {
			maxSpans = 1
		}
		d.batcher = tracing.NewBatcher(exp, tracing.BatchOptions{
			StatPrefix:    "tracing.opentelemetry.",
			RuntimePrefix: "tracing.opentelemetry.",
			MaxBuffered:   maxSpans,
			Target:        target,
		}, ctx)
		d.closer = exp
		if _, ok := exp.(tracing.EncodedExporter); ok {
			// Sampled spans are encoded as they finish, and the
			// batcher keeps only their bytes.
			d.pool.EncodeAtFinish(d, d.batcher)
		}
	}
	return d, nil
}

var _ tracing.ContextDriver = (*driver)(nil)

// driver is the configured tracer.
type driver struct {
	// batcher is nil without a collector: spans then only propagate.
	batcher *tracing.Batcher
	closer  tracing.Exporter
	pool    tracing.SpanPool
	// sampler, when configured, decides instead of the connection
	// manager and of an incoming context's flag.
	sampler Sampler
}

// StartSpan implements tracing.Driver, as Envoy's OpenTelemetry driver:
// without a traceparent, a root span sampled by the connection manager's
// decision; with a valid one, a child of it that keeps its sampled flag;
// with an invalid one, no span.
func (d *driver) StartSpan(h tracing.Headers, o tracing.StartOptions) *tracing.Span {
	p, found, err := extract(h)
	if err != nil {
		return nil
	}
	// A span that will be sampled is a pooled one from the start (the
	// batcher keeps it); the others, most, start in the caller's. A
	// sampler decides later: its sampled spans move into the pool then.
	// Spans encoded as they finish all start in the caller's: the
	// batcher keeps only their bytes.
	sampled := o.Traced
	if found {
		sampled = p.sampled
	}
	s := d.newSpan(o, !sampled || d.sampler != nil || d.pool.EncodesAtFinish())
	s.ID = s.NewSpanID()
	if !found {
		s.Trace = s.NewTraceID(false)
		s.Sampled = o.Traced
	} else {
		s.Trace, s.Parent, s.Sampled, s.TraceState = p.trace, p.span, p.sampled, p.state
	}
	if d.sampler != nil {
		r := d.sampler.Sample(SamplingParams{
			Parent: !s.Parent.IsZero(), ParentSampled: s.Sampled, ParentTraceState: s.TraceState,
			Trace: s.Trace, Name: s.Name, Kind: s.Kind,
		})
		s.Sampled, s.TraceState = r.Sampled, r.TraceState
	}
	if s.Sampled && !d.pool.EncodesAtFinish() {
		// The batcher keeps a sampled span past its request, unless
		// only its bytes (tracing.SpanEncoder).
		s = s.Pooled()
	}
	return s
}

// newSpan returns a span named, timed and of the kind o says: in o.Local
// when local and o has one, else a pooled one.
func (d *driver) newSpan(o tracing.StartOptions, local bool) *tracing.Span {
	var rep tracing.Reporter
	if d.batcher != nil {
		rep = d.batcher
	}
	var s *tracing.Span
	if local && o.Local != nil {
		s = d.pool.Local(o.Local, rep, w3c{})
	} else {
		s = d.pool.Get(rep, w3c{})
	}
	s.Name, s.Start = o.Operation, o.Start
	if o.Egress && !o.Spawn {
		// With upstream spans of its own, the request's span is the
		// server's in either direction (Envoy's getSpanKind).
		s.Kind = tracing.Client
	}
	return s
}

// EncodeTag implements tracing.TagEncoder: both exporters write a span's
// attributes as appendSpan does.
func (d *driver) EncodeTag(key, value string) string { return encodeTag(key, value) }

// AppendSpan implements tracing.SpanEncoder: both exporters join spans
// encoded as appendRequest writes them.
func (d *driver) AppendSpan(b []byte, s *tracing.Span) []byte { return encodeSpan(b, s) }

// Close implements tracing.Driver.
func (d *driver) Close() error {
	if d.batcher == nil {
		return nil
	}
	err := d.batcher.Close()
	if c, ok := d.closer.(interface{ Close() error }); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// StartContext implements tracing.ContextDriver: the span StartSpan
// starts when it is not sampled (no sampler configured), as a bare
// context. An incoming context's tracestate is kept as a view of the
// request's headers, not copied: nothing keeps it past the request.
func (d *driver) StartContext(h tracing.Headers, traced bool, c *tracing.SpanContext) bool {
	if d.sampler != nil {
		// The sampler decides from the span's name and kind.
		return false
	}
	v, found := h.Get(traceparent)
	if !found {
		if traced {
			return false
		}
		c.StartRoot()
		return true
	}
	p, err := parseTraceparent(v)
	switch {
	case err != nil:
		c.Invalidate()
		return true
	case p.sampled:
		return false
	}
	state, _ := h.Get(tracestate)
	c.StartChild(p.trace, p.span, state)
	return true
}

// InjectContext implements tracing.ContextDriver, as w3c's Inject.
func (d *driver) InjectContext(c *tracing.SpanContext, h tracing.HeaderSetDeleter) {
	setW3CDel(h, contextTraceparent(c), c.TraceState)
}

// Traceparent implements tracing.TraceparentDriver: InjectContext's
// traceparent, for a context with no tracestate.
func (d *driver) Traceparent(c *tracing.SpanContext) (string, bool) {
	if c.TraceState != "" {
		return "", false
	}
	if len(c.Scratch) != traceparentLen {
		return contextTraceparent(c), true
	}
	// contextTraceparent's ids written over the last traceparent,
	// without its calls: this runs for most requests.
	p := (*[traceparentLen]byte)(c.Scratch)
	putHex8((*[16]byte)(p[3:19]), (*[8]byte)(c.Trace[:8]))
	putHex8((*[16]byte)(p[19:35]), (*[8]byte)(c.Trace[8:]))
	putHex8((*[16]byte)(p[36:52]), (*[8]byte)(c.ID[:]))
	return unsafeString(c.Scratch), true
}

// SpanTraceparent implements tracing.TraceparentDriver: w3c's Inject's
// traceparent, for a span with no tracestate.
func (d *driver) SpanTraceparent(s *tracing.Span) (string, bool) {
	if s.TraceState != "" {
		return "", false
	}
	s.Scratch = putTraceparent(s.Scratch, &s.Trace, &s.ID, s.Sampled)
	return unsafeString(s.Scratch), true
}

// contextTraceparent writes c's traceparent, not sampled, into c.Scratch
// and returns it. Scratch holds nothing else (only InjectContext and
// Traceparent write it, always with the flag off): once it holds one,
// its layout stays, and only the ids are written over it.
func contextTraceparent(c *tracing.SpanContext) string {
	if len(c.Scratch) != traceparentLen {
		c.Scratch = putTraceparent(c.Scratch, &c.Trace, &c.ID, false)
		return unsafeString(c.Scratch)
	}
	putIDs((*[traceparentLen]byte)(c.Scratch), &c.Trace, &c.ID)
	return unsafeString(c.Scratch)
}

// ContextSpan implements tracing.ContextDriver.
func (d *driver) ContextSpan(c *tracing.SpanContext, o tracing.StartOptions) *tracing.Span {
	s := d.newSpan(o, true)
	// The span's children may be sampled (a mirror's trace_sampled) and
	// outlive the request: the tracestate is copied out of its headers.
	s.Trace, s.ID, s.Parent, s.TraceState = c.Trace, c.ID, c.Parent, strings.Clone(c.TraceState)
	return s
}
