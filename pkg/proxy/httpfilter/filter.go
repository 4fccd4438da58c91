// Package httpfilter is the interface between the HTTP connection manager
// and the HTTP filters, in the style of Envoy's stream filters. A filter
// package registers a Factory; the connection manager compiles each
// configured filter once (Factory.Compile), then, for every request, runs
// the chain: the decoder steps in configuration order on the request, the
// terminal filter (the router) last, and the encoder steps in reverse order
// on the response. The connection manager knows no filter by name.
//
// Each request runs in a goroutine of its own, so a filter may block in a
// step (to call an authorization service, to delay a request) for as long
// as its configuration allows: only that request waits. Stream.Sleep is
// the way to wait: the stream's timeouts and the client going away cut it
// short.
//
// A filter whose Factory also implements RouteFactory takes per-route
// configuration: the typed_per_filter_config entries of the route
// configuration, virtual hosts, routes and weighted clusters, keyed by the
// name the filter is configured with, compiled once with the route
// configuration and read per request with Stream.RouteConfig.
package httpfilter

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Status is what a filter step returns.
type Status uint8

const (
	// Continue hands the request (or response) to the next filter.
	Continue Status = iota
	// Stop ends the chain here: the filter answered the request itself
	// (Stream.SendLocalReply), and no later filter, nor the router, runs.
	Stop
)

// Factory builds one kind of HTTP filter from its configuration.
type Factory interface {
	// Compile checks and compiles a filter's typed_config, once per
	// connection manager. Errors name the field path below typed_config
	// ("pass_through_mode: must be set").
	Compile(config proto.Message, ctx Context) (Config, error)
}

// RouteFactory is implemented by the Factory of a filter that takes
// per-route configuration, as Envoy's createRouteSpecificFilterConfig.
type RouteFactory interface {
	// CompileRoute checks and compiles one typed_per_filter_config entry
	// (unwrapped from its FilterConfig), once per route configuration.
	// config is a message of the extension's route configuration type;
	// ctx.Name is the entry's key, the name the filter is configured
	// with. Errors name the field path below the entry.
	CompileRoute(config proto.Message, ctx Context) (RouteConfig, error)
}

// RouteConfig is a compiled per-route filter configuration; the filter
// that compiled it reads it back with Stream.RouteConfig. One that holds
// resources also implements io.Closer: the connection manager closes it
// once its route configuration is replaced (or the manager closes) and
// the last request that started with it has ended.
type RouteConfig = any

// Context is what a filter's configuration may use of the server.
type Context struct {
	// Name is the name the filter is configured with (http_filters[].name,
	// or the typed_per_filter_config key for CompileRoute): the key of its
	// per-route configuration.
	Name string
	// Stats is the server's stat store; StatPrefix the connection
	// manager's scope ("http.<stat_prefix>."), under which Envoy keeps
	// most filters' stats.
	Stats      *stats.Store
	StatPrefix string
	// Log is the "http" component logger.
	Log logr.Logger
	// Health is the server's health-check state.
	Health HealthState
	// Runtime reads runtime values; never nil.
	Runtime Runtime
	// Now is the clock of recorded times; never nil.
	Now func() time.Time
	// Extensions is the server's extension registry, in which a filter
	// finds the extensions its configuration names (a compressor's
	// compressor_library); nil when there is none.
	Extensions *extension.Registry
	// LookupByName reports whether extensions may be found by name (see
	// extension.LookupByName).
	LookupByName bool
	// Services reaches the configuration's clusters, for the filters
	// that call a service (ext_authz); nil when the server gives none.
	Services Services
	// Upstream reports that the filter is compiled for an upstream
	// filter chain (see UpstreamCapable): its instances run per attempt.
	Upstream bool
	// ServiceCluster is the proxy's own service cluster (the bootstrap's
	// node.cluster, or --service-cluster), which rate limit descriptors
	// name as source_cluster.
	ServiceCluster string
	// NodeMetadata is the bootstrap node's metadata (ext_authz's
	// bootstrap_metadata_labels_key reads it); nil when it has none.
	NodeMetadata *structpb.Struct
}

// Services is how a filter's configuration reaches the services it
// calls: gRPC channels (GrpcService) and connections to a cluster's hosts.
type Services interface {
	// OpenGRPC checks a GrpcService and opens its channel; errors name
	// the field below the GrpcService.
	OpenGRPC(gs *corev3.GrpcService) (*grpcservice.Channel, error)
	// Cluster returns the named cluster, nil when there is none.
	Cluster(name string) grpcservice.Cluster
}

// HealthState is the server's health-check state.
type HealthState interface {
	// HealthChecksFailed reports /healthcheck/fail in effect (until
	// /healthcheck/ok) or the server draining.
	HealthChecksFailed() bool
}

// Runtime reads the server's runtime values (runtime.Fraction reads a
// percentage through it).
type Runtime interface {
	// Uint64 returns key's value as an integer, def when it has none.
	Uint64(key string, def uint64) uint64
}

// Config is a compiled filter configuration.
type Config interface {
	// NewFilter returns the filter of one request. A filter that keeps no
	// state per request returns one shared value, so that the request
	// path allocates nothing.
	NewFilter() Filter
}

// A Config that holds resources (a gRPC channel, idle connections to an
// authorization service) also implements io.Closer: the connection manager
// closes it once its last request has ended.

// Terminal is implemented by the configuration of the terminal filter, the
// router: the connection manager routes and forwards the request itself
// once the filters before it continued. It must be the last filter, and
// only the last.
type Terminal interface {
	Config
	// IsTerminal reports true.
	IsTerminal() bool
}

// Filter is one request's filter. It implements the steps it takes part
// in: Decoder, Encoder, or both.
type Filter any

// Decoder is a filter that sees the request head.
type Decoder interface {
	// DecodeHeaders runs when the request head has arrived, before the
	// request is routed.
	DecodeHeaders(s Stream) Status
}

// Encoder is a filter that sees the response head.
type Encoder interface {
	// EncodeHeaders runs before the response head is sent: it may edit
	// s.ResponseHeaders. Its Status is ignored: the response has
	// started.
	EncodeHeaders(s Stream) Status
}

// Destroyer is a filter told when its request ends, however it ends
// (Envoy's onDestroy): to release what it holds, such as an active fault
// or itself back to a pool. The stream no longer uses the filter after.
type Destroyer interface {
	// OnDestroy runs once, after the response (or the reset).
	OnDestroy()
}

// Stream is one request as a filter sees it. Its values are valid during
// the step they are given to.
type Stream interface {
	// Request is what routing looks at: method, path, authority, scheme
	// and the request headers.
	Request() *router.Request
	// RequestHeaders are the request's headers, lower-case names, for
	// the filter to edit.
	RequestHeaders() router.HeaderEditor
	// SetPath replaces the request's :path (query string included), as
	// a filter that edits the query does; it goes upstream, and routing
	// sees it after ClearRouteCache.
	SetPath(path string)
	// SetAuthority replaces the request's :authority (Host), as the
	// dynamic forward proxy's host rewrites do; it goes upstream, and
	// routing sees it after ClearRouteCache.
	SetAuthority(host string)
	// ResponseHeaders are the response's headers, during EncodeHeaders.
	ResponseHeaders() router.HeaderEditor
	// ResponseStatus is the response's status, during EncodeHeaders.
	ResponseStatus() int
	// RequestBody describes the request body: whether there is one, and
	// its length (-1 when unknown: chunked, or HTTP/2 without
	// content-length). Content-Length is not among RequestHeaders: the
	// connection manager frames bodies itself.
	RequestBody() (length int64, has bool)
	// ResponseBody describes the response body during EncodeHeaders, as
	// RequestBody: a HEAD request's response, a 204 or a 304 has none.
	ResponseBody() (length int64, has bool)
	// TransformRequestBody, during DecodeHeaders of a request with a
	// body, sends every piece of the body through d (see DataDecoder).
	TransformRequestBody(d DataDecoder)
	// TransformResponseBody, during EncodeHeaders of a response with a
	// body, sends every piece of the body and its trailers through e
	// (see DataEncoder).
	TransformResponseBody(e DataEncoder)
	// StreamState returns the value kept under key for this request,
	// made by create on first use: what the request's filters share
	// (Envoy's per-stream filter state), such as the encoding several
	// compressor filters chose together.
	StreamState(key any, create func() any) any
	// SendLocalReply answers the request with status and body (text/plain
	// when not empty), the response flags of the access log, and the
	// %RESPONSE_CODE_DETAILS%. The filter then returns Stop. A gRPC
	// request gets Envoy's gRPC form of the reply: status 200 and a
	// grpc-status derived from status, the body as grpc-message.
	SendLocalReply(status int, body string, flags accesslog.ResponseFlags, details string)
	// ReplaceResponse, during EncodeHeaders, answers in place of the
	// response being encoded (Envoy's sendLocalReply from an encoder
	// filter): status, no header but content-type text/plain when body
	// is not empty (the filter adds its own after), and body instead of
	// the response's body and trailers. The filters that encode after
	// it see the new response.
	ReplaceResponse(status int, body string)
	// SendGrpcLocalReply is SendLocalReply with the grpc-status a gRPC
	// request gets; other requests get status and body.
	SendGrpcLocalReply(status int, grpcStatus uint32, body string, flags accesslog.ResponseFlags, details string)
	// AddResponseFlags adds response flags to the request's access log
	// entry (DI for a delay the filter injected).
	AddResponseFlags(flags accesslog.ResponseFlags)
	// MarkHealthCheck records that the request is a health check, for
	// the access log (not_health_check_filter leaves it out), as Envoy's
	// health_check filter marks the requests it recognises, answered or
	// passed through.
	MarkHealthCheck()

	// Route is the route the request matched, nil when none does. As in
	// Envoy, it is matched once, before the first filter that asks, and
	// kept: a filter that changes what routing looks at calls
	// ClearRouteCache so that the next call, or the router, matches
	// again.
	Route() *router.Route
	// ClusterName is the upstream cluster the route chose for the request
	// (a weighted cluster is picked once, with the route); "" without a
	// route or for a direct response or redirect.
	ClusterName() string
	// ClearRouteCache forgets the route matched so far.
	ClearRouteCache()
	// RouteConfig is the most specific per-route configuration of the
	// filter configured as name (weighted cluster, route, virtual host,
	// route configuration), as its RouteFactory compiled it; nil when no
	// level has one or there is no route. An entry's type picks the
	// filter that compiles it, whatever its key (as in Envoy, where a
	// wrapper and the filter it wraps share a name), so it may be another
	// filter's: a filter type-asserts it with ", ok" and ignores one of
	// another type, as Envoy's filters dynamic_cast theirs.
	RouteConfig(name string) RouteConfig
	// RouteConfigs appends to dst the per-route configurations of the
	// filter configured as name at every level, least specific first;
	// like RouteConfig's, they may be of another filter's type.
	RouteConfigs(name string, dst []RouteConfig) []RouteConfig

	// RemoteIP is the address of the downstream client, without port.
	RemoteIP() string
	// SetUpstreamSource makes the request's upstream connections leave
	// from src (Envoy's addUpstreamSocketOptions, as original_src uses
	// it): they bind its address with IP_TRANSPARENT and carry its mark,
	// and are shared only with requests asking for the same.
	SetUpstreamSource(src upstream.Source)
	// SetUpstreamOverrideHost asks the cluster for the host of o's
	// address before its load balancer (Envoy's setUpstreamOverrideHost,
	// as the stateful session filter uses it): the cluster picks it when
	// its override_host_status allows the host's health status; otherwise
	// a strict request fails with 503, another is balanced as usual.
	SetUpstreamOverrideHost(o upstream.OverrideHost)
	// ConnectionState returns the value kept under key for the
	// downstream connection the request came on, made by create on first
	// use; it lives as long as the connection and is shared by the
	// requests on it (HTTP/2 streams run at once: the value must be safe
	// for concurrent use).
	ConnectionState(key any, create func() any) any

	// Wait holds the request until done is closed (the answer of a
	// service the filter called), under the same limits as Sleep: false
	// means the wait was cut short, the request was answered with 408 or
	// the client went away, and the filter returns Stop at once.
	Wait(done <-chan struct{}) bool
	// BufferRequestBody reads the request body into memory before the
	// filter goes on, as Envoy's decoder filters buffer it; the router
	// then forwards the buffered bytes and the rest. It reads until the
	// body ends or, with partial, until limit bytes or more are held;
	// without partial, a body longer than limit is answered 413 (Envoy's
	// decoder buffer limit, downstream_rq_too_large). complete reports
	// that body is the whole request body. ok false means the stream has
	// answered (413, or 408 and 400 for a body that stopped arriving or
	// was malformed) or the client went away: the filter returns Stop.
	// body stays valid until the request ends.
	BufferRequestBody(limit int, partial bool) (body []byte, complete, ok bool)
	// RangeRequestHeaders calls fn for each request header field in
	// order (lower-case names; pseudo-headers, host and the framing and
	// hop-by-hop headers excluded), until it returns false.
	RangeRequestHeaders(fn func(name, value string) bool)
	// Info describes the stream's connection and protocol.
	Info() StreamInfo
	// DynamicMetadata is what the request's filters recorded (Envoy's
	// dynamic metadata), nil when none did: access logs show it, RBAC
	// matches it, ext_authz sends its namespaces. Callers do not modify
	// it.
	DynamicMetadata() *corev3.Metadata
	// SetDynamicMetadata merges fields into the namespace of the
	// request's dynamic metadata, as Envoy's setDynamicMetadata: each
	// field replaces the one of its name. The stream keeps fields, which
	// the caller no longer modifies (it may share it between requests).
	SetDynamicMetadata(namespace string, fields *structpb.Struct)
	// SetTypedDynamicMetadata puts value at namespace of the request's
	// typed dynamic metadata (typed_filter_metadata), replacing what was
	// there. The stream keeps value, which the caller no longer modifies.
	SetTypedDynamicMetadata(namespace string, value *anypb.Any)
	// SetFilterState keeps obj under key in the request's filter state
	// (Envoy's StreamInfo filter state), which access logs show with
	// %FILTER_STATE(key)%; the filter may go on updating obj.
	SetFilterState(key string, obj accesslog.FilterStateObject)
	// FilterStateValue returns the filter state value under key: the
	// request's own (an accesslog.FilterStateObject a filter kept with
	// SetFilterState), else its connection's (what a network filter kept,
	// such as sni_cluster's cluster name, a string), as Envoy's stream
	// filter state reads through to its connection's. False when neither
	// has one.
	FilterStateValue(key string) (any, bool)

	// Sleep waits d before the filter goes on, as Envoy's timers delay a
	// stream. It returns false when the wait was cut short: the stream
	// idle timeout (the route's idle_timeout, else the connection
	// manager's) or the request timeout fired first, and the request was
	// answered with 408; or the client reset the stream or went away, or
	// the server is shutting down. The filter then returns Stop at once.
	Sleep(d time.Duration) bool
}

// StreamInfo is what a filter may read of the stream's connection.
type StreamInfo struct {
	// RemoteAddress and LocalAddress are the downstream connection's
	// peer and local addresses, "ip:port", as the listener filters left
	// them (a PROXY protocol header's).
	RemoteAddress, LocalAddress string
	// DirectRemoteAddress is the socket's peer, "ip:port", whatever a
	// listener filter restored.
	DirectRemoteAddress string
	// TLS describes a TLS connection (its peer certificate included),
	// nil for a plaintext one; RequestedServerName is the SNI the client
	// asked for.
	TLS                 *accesslog.TLSInfo
	RequestedServerName string
	// Protocol is "HTTP/1.0", "HTTP/1.1" or "HTTP/2".
	Protocol string
	// Start is when the request's first byte arrived.
	Start time.Time
	// BytesReceived counts the request body bytes received so far.
	BytesReceived uint64
	// ContentLength is the request's Content-Length, -1 when it has
	// none (the connection manager frames bodies itself: the header is
	// not among the request headers).
	ContentLength int64
	// MaxHeadersCount is the connection manager's max_headers_count, the
	// most header fields a request or response head may have.
	MaxHeadersCount int
	// UpstreamRequestSent is when the request whose response is being
	// relayed went upstream: its last byte for an HTTP/1.1 upstream, the
	// start of the exchange for HTTP/2 (the base of the router's
	// upstream_rq_time). It is zero when no response came from upstream
	// (a local reply).
	UpstreamRequestSent time.Time
	// UpstreamHost is the address of the host the request was sent to
	// (its last attempt's), "" when none was picked.
	UpstreamHost string
}
