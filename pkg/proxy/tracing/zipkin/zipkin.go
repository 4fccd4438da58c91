// Package zipkin is the Zipkin tracer (envoy.tracers.zipkin): B3
// propagation, and spans posted in batches as Zipkin's JSON v2 to a
// collector cluster.
package zipkin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// Name is the tracer's name in the proxy. spelling.
const Name = "proxy.tracers.zipkin"

// Factory builds the tracer.
type Factory struct{}

// Compile implements tracing.Factory.
func (Factory) Compile(config proto.Message, ctx tracing.Context) (tracing.Driver, error) {
	cfg, ok := config.(*tracev3.ZipkinConfig)
	if !ok {
		return nil, errors.New("not a ZipkinConfig")
	}
	// The unset value (0, deprecated) means JSON, as in Envoy.
	switch v := cfg.GetCollectorEndpointVersion(); v {
	case 0, tracev3.ZipkinConfig_HTTP_JSON:
	default:
		return nil, fmt.Errorf("collector_endpoint_version: %v is not supported by Outrigger (HTTP_JSON is)", v)
	}
	name := cfg.GetCollectorCluster()
	if name == "" {
		return nil, errors.New("collector_cluster: must be set")
	}
	var cl grpcservice.Cluster
	if ctx.Cluster != nil {
		cl = ctx.Cluster(name)
	}
	if cl == nil {
		// Envoy's own message.
		return nil, fmt.Errorf("collector_cluster: envoy.tracers.zipkin: unknown cluster '%s'", name)
	}
	host := cfg.GetCollectorHostname()
	if host == "" {
		host = name
	}
	p, err := tracing.NewPoster(cl, host, cfg.GetCollectorEndpoint(), http.Header{}, 0)
	if err != nil {
		return nil, fmt.Errorf("collector_endpoint: %w", err)
	}
	d := &driver{
		shared:  true,
		long:    cfg.GetTraceId_128Bit(),
		stamped: cfg.GetTimestampTraceIds(),
		service: ctx.Node.GetCluster(),
		poster:  p,
	}
	if v := cfg.GetSharedSpanContext(); v != nil {
		d.shared = v.GetValue()
	}
	d.batcher = tracing.NewBatcher(&exporter{p: p, service: d.service}, tracing.BatchOptions{
		StatPrefix:    "tracing.zipkin.",
		RuntimePrefix: "tracing.zipkin.",
		Target:        "cluster " + name,
		FailedStat:    "reports_dropped",
	}, ctx)
	return d, nil
}

// driver is the configured tracer.
type driver struct {
	// shared is shared_span_context: an ingress span takes the client's
	// span id.
	shared bool
	// long is trace_id_128bit for the traces the proxy starts.
	long bool
	// stamped is timestamp_trace_ids: a new trace id's first 32 bits
	// are the epoch seconds of its start.
	stamped bool
	service string
	batcher *tracing.Batcher
	poster  *tracing.Poster
	pool    tracing.SpanPool
}

// StartSpan implements tracing.Driver, as Envoy's Zipkin driver: the span
// is named after the host; without a B3 context it is the root of a new
// trace; with one it keeps its trace and sampling, and either shares the
// client's span (an ingress span with shared_span_context) or is its
// child; an unreadable context traces nothing.
func (d *driver) StartSpan(h tracing.Headers, o tracing.StartOptions) *tracing.Span {
	sampled := extractSampled(h, o.Traced)
	c, err := extractContext(h, sampled)
	if err != nil && !errors.Is(err, errNoContext) {
		return nil
	}
	s := d.pool.Get(d.batcher, b3{})
	// The host views the request's buffer: SetOperation copies it.
	s.SetOperation(o.Host)
	s.Start, s.Sampled = o.Start, sampled
	if o.Egress {
		s.Kind = tracing.Client
	}
	switch {
	case errors.Is(err, errNoContext):
		s.ID = s.NewSpanID()
		// A new trace's low half is the root span's id, as in Envoy.
		s.Trace = s.NewTraceID(true)
		copy(s.Trace[8:], s.ID[:])
		if d.long {
			high := s.NewSpanID()
			copy(s.Trace[:8], high[:])
		}
		if d.stamped {
			// [32-bit epoch seconds][32-bit random]: in the 64-bit id,
			// or in the high word of a 128-bit one.
			word := 8
			if d.long {
				word = 0
			}
			binary.BigEndian.PutUint32(s.Trace[word:word+4], uint32(o.Start.Unix()))
		}
	case o.Egress || !d.shared:
		s.Trace, s.ID, s.Parent = c.trace, s.NewSpanID(), c.span
	default:
		s.Trace, s.ID, s.Parent, s.Shared = c.trace, c.span, c.parent, true
	}
	return s
}

// Close implements tracing.Driver.
func (d *driver) Close() error {
	err := d.batcher.Close()
	d.poster.Close()
	return err
}
