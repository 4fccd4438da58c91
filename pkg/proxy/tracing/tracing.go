// Package tracing is what the HTTP connection manager and the router use of
// a tracing provider (Envoy's tracers, category envoy.tracers): a Driver
// starts the span of a request from the trace context its headers carry,
// and the span propagates its own context to the upstream request and is
// reported, once finished, to the provider's collector through a Batcher.
// The providers live in the packages below (opentelemetry, zipkin); the
// sampling decision, the stats and the tags are the connection manager's,
// as in Envoy.
package tracing

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Category is Envoy's extension category of tracers.
const Category = "envoy.tracers"

// Headers are the request headers a driver reads the incoming trace
// context from.
type Headers interface {
	Get(name string) (string, bool)
}

// HeaderSetter is where a span writes its context: the upstream request's
// headers.
type HeaderSetter interface {
	Set(name, value string)
	Del(name string)
}

// HeaderSetDeleter is a HeaderSetter that sets one field and deletes
// another in one pass over its fields (the connection manager's request
// headers), as W3C propagation does for every request: a traceparent set,
// the tracestate removed.
type HeaderSetDeleter interface {
	HeaderSetter
	// SetDel is Set(set, value) then Del(del).
	SetDel(set, value, del string)
}

// Driver is one configured tracing provider.
type Driver interface {
	// StartSpan starts the span of a request: a child of the context the
	// headers carry, or a root span. It returns nil when the headers carry
	// a context the driver cannot read (Envoy's null span: the request is
	// not traced and nothing is propagated).
	StartSpan(h Headers, o StartOptions) *Span
	// Close reports what is buffered, within a bound, and releases the
	// driver's connections.
	Close() error
}

// StartOptions describe the span a connection manager starts.
type StartOptions struct {
	// Operation is the span's name as Envoy's tracer gives it: "ingress",
	// or "egress <host>" on an OUTBOUND listener.
	Operation string
	// Host is the request's :authority (Zipkin names spans with it). It
	// may view a buffer the next request reuses: a span keeping it must
	// copy it.
	Host string
	// Egress is set on OUTBOUND listeners: the span is the client's,
	// unless Spawn.
	Egress bool
	// Spawn is the connection manager's spawn_upstream_span: the proxy is
	// a hop of its own, its request span the server's whatever the
	// direction, and each upstream request a client span under it.
	Spawn bool
	// Start is when the request's first byte arrived.
	Start time.Time
	// Traced is the connection manager's sampling decision.
	Traced bool
	// Local, when set, is a span the caller keeps from one request to
	// the next, which a driver may start the span in when it is not
	// sampled (SpanPool.Local); a sampled span is always a pooled one.
	Local *Span
}

// Factory builds a driver from its configuration (the typed_config of a
// Tracing.Http provider). Errors name the field below the configuration.
type Factory interface {
	Compile(config proto.Message, ctx Context) (Driver, error)
}

// Context is what a driver may use of the server.
type Context struct {
	// Stats is the server's stat store; nil keeps no stats.
	Stats *stats.Store
	// Log is the tracers' logger.
	Log logr.Logger
	// OpenGRPC opens the channel of a GrpcService; nil refuses gRPC
	// collectors.
	OpenGRPC func(gs *corev3.GrpcService) (*grpcservice.Channel, error)
	// Cluster returns a cluster of the configuration by name (nil when
	// there is none), for collectors reached over HTTP.
	Cluster func(name string) grpcservice.Cluster
	// Node is the bootstrap's node: its cluster is Zipkin's service name.
	Node *corev3.Node
	// Runtime reads runtime values (flush intervals and sizes); nil reads
	// none.
	Runtime Runtime
	// Version is the proxy's build version (Envoy's
	// VersionInfo::version()), which tracers report as their SDK's.
	Version string
	// Extensions holds the tracers' own extensions (OpenTelemetry's
	// resource detectors and samplers); nil has none.
	Extensions *extension.Registry
}

// Runtime is the server's runtime as a driver reads it.
type Runtime interface {
	Uint64(key string, def uint64) uint64
}
