package httpconn

import (
	"context"
	"net"
	"net/http"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Deps is what a connection manager needs from the server that builds it.
// Only Log and Stats are required; a nil interface disables what it backs
// (no Upstreams: every cluster route answers 503 no_cluster).
type Deps struct {
	Log logr.Logger
	// RouterLog is the "router" component's logger: the route and upstream
	// host choices at debug level. The zero value discards them.
	RouterLog logr.Logger
	Stats     *stats.Store
	// ListenerStatPrefix is the stat scope of the listener the manager
	// serves, as the listener names it ("listener.127.0.0.1_10000.",
	// "listener.<stat_prefix>."): the manager keeps Envoy's per-listener
	// copies of its response-class and completed-request counters under
	// "<ListenerStatPrefix>http.<stat_prefix>.". Empty keeps none (a
	// manager built without a listener).
	ListenerStatPrefix string
	// Upstreams resolves cluster names for router routes.
	Upstreams Upstreams
	// Drain says, per response, whether a draining listener wants the
	// connection closed.
	Drain Drainer
	// Health is the server's health-check state, read by the health_check
	// filter.
	Health HealthState
	// Extensions resolves the HTTP filters of http_filters to their
	// factories; nil allows none (an empty list still means the router).
	Extensions *extension.Registry
	// Services is how filters that call a service (ext_authz) reach
	// the configuration's clusters; nil gives them none.
	Services httpfilter.Services
	// AccessLogs is what the access loggers use of the server: where
	// lines go (a file the server keeps, so that /reopen_logs reopens it,
	// or a standard stream), gRPC channels, the node, stats. Without Open,
	// access loggers that write lines are refused.
	AccessLogs accesslog.SinkContext
	// Runtime reads the server's runtime values (the premature-reset
	// limits, the extension lookup by name); nil reads none, so Envoy's
	// defaults apply.
	Runtime RuntimeValues
	// Overload is the overload manager's state for the listener's
	// connections; nil means no overload action applies (as for the admin
	// listener, which Envoy gives a null overload manager).
	Overload OverloadState
	// Tracing is what the tracers of tracing.provider use of the server;
	// its Node gives the spans' node_id and zone tags.
	Tracing tracing.Context
	// DefaultTracer is the bootstrap's tracing.http, the provider of a
	// connection manager whose tracing names none; nil for none.
	DefaultTracer *tracev3.Tracing_Http
	// ListenerMetadata is the listener's metadata, which
	// %METADATA(LISTENER:...)% reads; nil when it has none.
	ListenerMetadata *corev3.Metadata
	// Egress is set for the listeners whose traffic_direction is
	// OUTBOUND: their spans are named "egress <host>" and are clients'.
	Egress bool
	// Now is the clock of recorded times (access-log timestamps and
	// durations, the date header, stat durations); socket deadlines always
	// follow the real clock. Nil means the real clock, which is then read
	// once per step for both: a server not running on a test clock should
	// leave it nil, as setting it costs an extra clock read per timestamp.
	Now func() time.Time
}

// Upstreams is how the connection manager reaches clusters. The connection
// manager declares it so that it never imports the cluster manager; the
// server adapts the cluster manager to it.
type Upstreams interface {
	// Cluster returns the named cluster, or nil when there is none (the
	// request then gets 503 with the NC response flag).
	Cluster(name string) UpstreamCluster
}

// UpstreamCluster is one cluster as the router filter uses it.
type UpstreamCluster interface {
	// Name is the cluster's name (%UPSTREAM_CLUSTER%).
	Name() string
	// Metadata is the cluster's metadata (%CLUSTER_METADATA%), nil when
	// it has none.
	Metadata() *corev3.Metadata
	// Stats are the cluster's request and connection stats.
	Stats() *upstream.ClusterStats
	// PickHost chooses a host with the cluster's load balancer, which may
	// read the request's downstream side (an ORIGINAL_DST cluster); nil
	// when no host is healthy (503 with the UH response flag).
	PickHost(pc *upstream.PickContext) *upstream.Host
	// DropOverload draws whether a request is dropped under the
	// cluster's load assignment's drop_overloads (503 with the DO
	// response flag), before a host is chosen.
	DropOverload() bool
	// HTTP2For reports whether a request from a client that spoke HTTP/2
	// (or not) goes to this cluster over HTTP/2: the cluster's HTTP
	// protocol options choose one protocol, or follow the client's.
	HTTP2For(clientHTTP2 bool) bool
	// HTTP1Format is how HTTP/1.1 requests to this cluster are written
	// (its http_protocol_options): field names in proper case
	// (header_key_format.proper_case_words), the target in absolute form
	// (send_fully_qualified_url).
	// The value is the cluster's, never changed.
	HTTP1Format() *upstream.HTTP1Format
	// HTTP1Trailers reports whether HTTP/1.1 requests to this cluster
	// end a chunked body with the request's trailers, and its responses'
	// trailers are kept (its http_protocol_options' enable_trailers).
	HTTP1Trailers() bool
	// MaxResponseHeadBytes bounds an HTTP/1.1 response head from this
	// cluster (its max_response_headers_kb).
	MaxResponseHeadBytes() int
	// AutoSNI is how the cluster's upstream handshakes take their server
	// name and SAN check from each request (auto_sni,
	// auto_san_validation), nil when they do not.
	AutoSNI() *upstream.AutoSNI
	// MaxStreamDuration is the cluster's max_stream_duration: the
	// longest an upstream request may last once it has a connection; 0
	// for no limit.
	MaxStreamDuration() time.Duration
	// AcquireHTTP1For lends an idle HTTP/1.1 connection to h or dials
	// one within the cluster's connect_timeout. A dial failure is counted
	// by the pool and returned (503 with the UF response flag), a circuit
	// breaker's refusal is upstream.ErrOverflow (503, UO). The request
	// counts against the breakers of its priority (a.High). A request
	// waiting for a connection the breakers keep from opening gives up at
	// a.Deadline (zero: none) with context.DeadlineExceeded, and when
	// a.Gone (nil: never asked) reports its client gone.
	AcquireHTTP1For(ctx context.Context, h *upstream.Host, a upstream.Acquire) (*upstream.Conn, error)
	// ReleaseHTTP1 gives a connection back; reusable false closes it.
	ReleaseHTTP1(c *upstream.Conn, reusable bool)
	// RoundTripHTTP2 sends one request to h over the cluster's HTTP/2
	// pool.
	RoundTripHTTP2(req *http.Request, h *upstream.Host) (*http.Response, error)
	// TryRetry takes a unit of the cluster's max_retries circuit breaker
	// of the route's priority (HIGH when high) for a retry; false when it
	// is open. ReleaseRetry gives it back once the retried attempt's
	// outcome is known.
	TryRetry(high bool) bool
	ReleaseRetry(high bool)
	// HealthChecked reports whether the cluster has active health
	// checks; only then does an upstream's
	// x-envoy-immediate-health-check-fail matter, and
	// ImmediateHealthCheckFail fail its host at once, as Envoy's router
	// hands it to the host's health checker.
	HealthChecked() bool
	ImmediateHealthCheckFail(h *upstream.Host)
	// ConnectHost opens a plain TCP connection to h within the cluster's
	// connect_timeout, for a CONNECT terminated at the proxy; the caller
	// closes it.
	ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error)
}

// hostCluster is what an UpstreamCluster whose hosts belong to other
// clusters (an aggregate cluster) also has: the view of one attempt once
// its host is chosen, whose pool, protocol and connection stats are the
// host's cluster's.
type hostCluster interface {
	ForHost(h *upstream.Host) UpstreamCluster
}

// poolStatser is what an aggregate cluster's attempt view also has: the
// stats of the cluster whose pool carries the request, which count it
// (upstream_rq_total, upstream_rq_active, upstream_rq_completed) while
// the aggregate counts its outcome.
type poolStatser interface {
	PoolStats() *upstream.ClusterStats
}

// priorityMapper is what an UpstreamCluster whose load balancer sees its
// hosts' priorities otherwise (an aggregate cluster's linearized levels)
// also has, for previous_priorities: the level of h, false when the
// cluster no longer has it.
type priorityMapper interface {
	LinearPriority(h *upstream.Host) (int, bool)
}

// RuntimeValues is the server's runtime as the connection manager reads it:
// one atomic snapshot load and a map read per call.
type RuntimeValues interface {
	// Uint64 returns key's value as an integer, def when it has none.
	Uint64(key string, def uint64) uint64
	// Bool returns key's value as a feature flag, def when it has none.
	Bool(key string, def bool) bool
}

// OverloadState is the overload manager as the connection manager consults
// it (the server's *overload.Manager). Every method is safe for concurrent
// use and cheap enough for the request path: an atomic load, plus one
// random draw only while an action is partly active (a scaled trigger
// between its thresholds). An action that is not configured is inactive.
type OverloadState interface {
	// StopAcceptingRequests reports whether envoy.overload_actions.stop_accepting_requests
	// refuses the request whose headers were just decoded. It answers true
	// with a probability equal to the action's state: always while
	// saturated, never while inactive. Envoy then skips the filter chain,
	// answers 503 with the body "envoy overloaded" (response flag OM), and
	// counts http.<stat_prefix>.downstream_rq_overload_close. Ask once per
	// request.
	StopAcceptingRequests() bool
	// DisableKeepalive reports whether envoy.overload_actions.disable_http_keepalive
	// closes the connection of the response being encoded. It answers true
	// with a probability equal to the action's state (every response while
	// saturated). Envoy asks once per response, only while the connection
	// is not already draining; on true it counts
	// http.<stat_prefix>.downstream_cx_overload_disable_keepalive and
	// starts the connection's drain as a drain close does (HTTP/1:
	// Connection: close on this response; HTTP/2: GOAWAY), also counting
	// downstream_cx_drain_close.
	DisableKeepalive() bool
	// ScaleIdleTimeout returns the effective value of the connection idle
	// timeout d (common_http_protocol_options.idle_timeout) under
	// envoy.overload_actions.reduce_timeouts with a
	// HTTP_DOWNSTREAM_CONNECTION_IDLE minimum: min + (d - min) * (1 - state),
	// where min is min_timeout (capped at d) or min_scale * d. It is d
	// while the action is inactive or the timer type has no minimum, and
	// min once the action is saturated; a zero d (disabled) stays zero.
	// The state can change while a timer runs (Envoy moves running
	// timers): read the value again when re-arming the timer.
	ScaleIdleTimeout(d time.Duration) time.Duration
	// ScaleStreamIdleTimeout is ScaleIdleTimeout for stream_idle_timeout
	// (HTTP_DOWNSTREAM_STREAM_IDLE).
	ScaleStreamIdleTimeout(d time.Duration) time.Duration
}

// Drainer is a listener's drain state as the connection manager sees it.
type Drainer interface {
	// DrainClose reports whether the response being sent should close its
	// connection (HTTP/1: Connection: close; HTTP/2: GOAWAY). During a
	// gradual drain it answers true for a share of calls growing to all.
	DrainClose() bool
	// Draining reports whether a drain sequence has started.
	Draining() bool
}

// HealthState is the server's health-check state as the health_check
// filter reads it.
type HealthState interface {
	// HealthChecksFailed reports /healthcheck/fail in effect (until
	// /healthcheck/ok) or the server draining.
	HealthChecksFailed() bool
}
