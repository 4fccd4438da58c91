// Package zipkin is the Zipkin tracer (envoy.tracers.zipkin): B3
// propagation, and spans posted in batches as Zipkin's JSON v2 to a
// collector cluster.
package zipkin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"

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
	p, name, err := collector(cfg, ctx)
	if err != nil {
		return nil, err
	}
	d := &driver{
		shared: true,
		//lint:ignore SA1019 split_spans_for_request is deprecated for the connection manager's spawn_upstream_span, and still accepted.
		split:   cfg.GetSplitSpansForRequest(),
		w3c:     cfg.GetTraceContextOption() == tracev3.ZipkinConfig_USE_B3_WITH_W3C_PROPAGATION,
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

// collector builds the poster of the reports: from collector_service when
// it is set (it takes precedence, as in Envoy), else from the legacy
// collector_cluster, collector_endpoint and collector_hostname. It returns
// the collector's cluster name.
func collector(cfg *tracev3.ZipkinConfig, ctx tracing.Context) (*tracing.Poster, string, error) {
	var name, host, path, field string
	headers := http.Header{}
	if hs := cfg.GetCollectorService(); hs != nil {
		field = "collector_service.http_uri.cluster"
		if len(hs.GetFormatters()) > 0 {
			return nil, "", errors.New("collector_service.formatters: not supported by Outrigger")
		}
		hu := hs.GetHttpUri()
		name = hu.GetCluster()
		if name == "" {
			return nil, "", errors.New("collector_service.http_uri.cluster: must be set")
		}
		if hu.GetUri() == "" {
			return nil, "", errors.New("collector_service.http_uri.uri: must be set")
		}
		host, path = splitCollectorURI(hu.GetUri())
		if host == "" {
			host = name
		}
		var err error
		if headers, err = tracing.HeadersToAdd(hs.GetRequestHeadersToAdd()); err != nil {
			return nil, "", fmt.Errorf("collector_service.%w", err)
		}
	} else {
		field = "collector_cluster"
		name = cfg.GetCollectorCluster()
		if name == "" {
			return nil, "", errors.New("collector_cluster: must be set (or collector_service)")
		}
		host, path = cfg.GetCollectorHostname(), cfg.GetCollectorEndpoint()
		if host == "" {
			host = name
		}
	}
	var cl grpcservice.Cluster
	if ctx.Cluster != nil {
		cl = ctx.Cluster(name)
	}
	if cl == nil {
		// Envoy's own message.
		return nil, "", fmt.Errorf("%s: envoy.tracers.zipkin: unknown cluster '%s'", field, name)
	}
	// Each report's deadline is the runtime key tracing.zipkin.request_timeout
	// (the batcher's), for collector_service too: Envoy does not read
	// http_uri.timeout.
	p, err := tracing.NewPoster(cl, host, path, headers, 0)
	if err != nil {
		if cfg.GetCollectorService() != nil {
			return nil, "", fmt.Errorf("collector_service.http_uri.uri: %w", err)
		}
		return nil, "", fmt.Errorf("collector_endpoint: %w", err)
	}
	return p, name, nil
}

// splitCollectorURI splits collector_service's uri as Envoy does: with a
// scheme ("https://host/path"), into its host and path ("/" when it has
// none); without one, it is a path alone (no host).
func splitCollectorURI(uri string) (host, path string) {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "", uri
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return rest, "/"
	}
	return rest[:i], rest[i:]
}

// driver is the configured tracer.
type driver struct {
	// shared is shared_span_context: an ingress span takes the client's
	// span id.
	shared bool
	// split is split_spans_for_request: as the connection manager's
	// spawn_upstream_span, the request's span is the server's whatever
	// the direction.
	split bool
	// w3c is trace_context_option USE_B3_WITH_W3C_PROPAGATION: a request
	// without B3 headers is read from its traceparent, and upstream
	// requests get a traceparent beside the B3 headers.
	w3c bool
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
	var (
		c       b3Context
		err     error
		sampled bool
		prop    tracing.Propagator = b3{}
	)
	if d.w3c {
		prop = b3w3c{}
		c, sampled, err = extractWithW3C(h, o.Traced)
	} else {
		sampled = extractSampled(h, o.Traced)
		c, err = extractContext(h, sampled)
	}
	if err != nil && !errors.Is(err, errNoContext) {
		return nil
	}
	s := d.pool.Get(d.batcher, prop)
	// The host views the request's buffer: SetOperation copies it.
	s.SetOperation(o.Host)
	s.Start, s.Sampled = o.Start, sampled
	// With upstream spans of their own (spawn_upstream_span or
	// split_spans_for_request) the request's span is the server's in
	// either direction, as Envoy's getAnnotation decides.
	egress := o.Egress && !o.Spawn && !d.split
	if egress {
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
	case egress || !d.shared:
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
