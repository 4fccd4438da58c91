package accesslog

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
)

// HeaderGetter reads one header of a request or response. Names are asked
// for in lower case; several values of one header come back joined by ","
// as Envoy joins them. The connection manager implements it over its
// header structure without allocating.
type HeaderGetter interface {
	Get(lowerCaseName string) (value string, ok bool)
}

// Entry is what the connection manager knows about one request when it
// logs it. Empty strings and zero times print as missing ("-", or nothing
// with omit_empty_values); the numbers (ResponseCode, the byte counts,
// Duration, ConnectionID) always print, 0 included, as in Envoy.
type Entry struct {
	// StartTime is when the first byte of the request was received.
	StartTime time.Time

	// Method, Path, Authority and Scheme are the request's pseudo-headers
	// (%REQ(:METHOD)%, %REQ(:PATH)%, %REQ(:AUTHORITY)%, %REQ(:SCHEME)%).
	// Path includes the query string as received.
	Method    string
	Path      string
	Authority string
	Scheme    string
	// Protocol is "HTTP/1.0", "HTTP/1.1" or "HTTP/2" (%PROTOCOL%).
	Protocol string

	// RequestHeaders backs %REQ(...)% for regular headers. When the router
	// rewrote the path, it answers the original one for
	// "x-envoy-original-path", as Envoy's router sets that header.
	RequestHeaders HeaderGetter
	// ResponseHeaders backs %RESP(...)%; nil before a response exists.
	ResponseHeaders HeaderGetter
	// ResponseTrailers backs %TRAILER(...)%; nil when there are none.
	ResponseTrailers HeaderGetter

	// ResponseCode is the status sent downstream; 0 when no response was
	// sent (printed as 0, as Envoy does).
	ResponseCode int
	// ResponseCodeDetails says why the response has its code
	// (%RESPONSE_CODE_DETAILS%), e.g. "via_upstream", "route_not_found".
	ResponseCodeDetails string
	// ResponseFlags are Envoy's short codes for what went wrong.
	ResponseFlags ResponseFlags

	// BytesReceived and BytesSent count body bytes, as Envoy counts them.
	BytesReceived uint64
	BytesSent     uint64

	// Duration is from StartTime to the last byte sent downstream.
	Duration time.Duration
	// LastRequestByte is when the last request byte was received
	// (%REQUEST_DURATION%); zero when unknown.
	LastRequestByte time.Time
	// FirstUpstreamByte is when the first byte of the upstream response
	// arrived (%RESPONSE_DURATION%); zero for local replies.
	FirstUpstreamByte time.Time

	// UpstreamHost is the upstream host's "ip:port" (%UPSTREAM_HOST%).
	UpstreamHost string
	// UpstreamCluster is the cluster's name (%UPSTREAM_CLUSTER%).
	UpstreamCluster string
	// UpstreamLocalAddress is the local "ip:port" of the upstream
	// connection (%UPSTREAM_LOCAL_ADDRESS%).
	UpstreamLocalAddress string
	// UpstreamTransportFailureReason says why connecting upstream failed
	// (%UPSTREAM_TRANSPORT_FAILURE_REASON%).
	UpstreamTransportFailureReason string

	// DownstreamRemoteAddress and DownstreamLocalAddress are the
	// downstream connection's "ip:port" ends. The connection manager
	// builds these strings once per connection, not per request.
	DownstreamRemoteAddress string
	DownstreamLocalAddress  string
	// RequestedServerName is the TLS SNI (%REQUESTED_SERVER_NAME%).
	RequestedServerName string
	// TLSJA3Fingerprint and TLSJA4Fingerprint are the ClientHello's
	// fingerprints from the tls_inspector (%TLS_JA3_FINGERPRINT%,
	// %TLS_JA4_FINGERPRINT%), "" when not computed.
	TLSJA3Fingerprint, TLSJA4Fingerprint string
	// TLS describes a downstream TLS connection (the DOWNSTREAM_TLS_* and
	// DOWNSTREAM_PEER_* operators); nil for a plaintext one.
	TLS *TLSInfo
	// UpstreamTLS describes the upstream connection's TLS (the
	// UPSTREAM_TLS_*, UPSTREAM_PEER_* and UPSTREAM_LOCAL_* TLS
	// operators); nil for a plaintext one or none.
	UpstreamTLS *TLSInfo
	// ConnectionID is the downstream connection's id (%CONNECTION_ID%).
	ConnectionID uint64
	// UpstreamRequestAttemptCount is how many times the request went to
	// an upstream, retries included (%UPSTREAM_REQUEST_ATTEMPT_COUNT%);
	// 0 when it never did.
	UpstreamRequestAttemptCount uint32

	// RouteName is the matched route's name (%ROUTE_NAME%).
	RouteName string
	// FilterChainName is the name of the listener's filter chain serving
	// the connection (%FILTER_CHAIN_NAME%); empty when none matched.
	FilterChainName string
	// DownstreamTransportFailureReason says why the downstream transport
	// (TLS) handshake failed (%DOWNSTREAM_TRANSPORT_FAILURE_REASON%):
	// only listener access logs see a connection that failed it.
	DownstreamTransportFailureReason string

	// Type is why the entry is logged: DownstreamEnd for a finished
	// request, NotSet for a listener's log of a connection
	// (log_type_filter).
	Type datav3.AccessLogType
	// HealthCheck is set when the health_check filter recognised the
	// request as a health check (not_health_check_filter).
	HealthCheck bool
	// LocalReplyBody backs %LOCAL_REPLY_BODY%: the body of the local
	// reply being formatted by local_reply_config (empty otherwise, as in
	// Envoy's access logs).
	LocalReplyBody string
	// ServiceForcedTrace is set when the request is traced because the
	// service forced it (x-envoy-force-trace on a request of a connection
	// manager with tracing): what traceable_filter matches. Without
	// tracing configured no request is, as in Envoy.
	ServiceForcedTrace bool
	// TraceID and SpanID are the ids of the request's span (Envoy's
	// active span), sampled or not; zero when the request has none (no
	// tracer, or a context the tracer cannot read). A 64-bit trace id
	// fills the last 8 bytes.
	TraceID [16]byte
	SpanID  [8]byte
	// DynamicMetadata is what filters recorded about the request
	// (metadata_filter, %DYNAMIC_METADATA%); nil when none did. Only the
	// RBAC filter sets some so far.
	DynamicMetadata *corev3.Metadata
	// FilterState holds the objects filters left for the access logs
	// (%FILTER_STATE%), by key; nil when none did.
	FilterState map[string]FilterStateObject
	// ConnFilterState is the connection's filter state, which
	// %FILTER_STATE% reads when FilterState has no object under the key
	// (what the network set_filter_state filter kept); nil for none.
	ConnFilterState FilterStateReader
	// ClusterMetadata is the upstream cluster's metadata
	// (%CLUSTER_METADATA%); nil before a cluster is chosen.
	ClusterMetadata *corev3.Metadata
	// UpstreamHostMetadata is the chosen upstream host's endpoint metadata
	// (%UPSTREAM_METADATA%); nil before a host is chosen.
	UpstreamHostMetadata *corev3.Metadata
	// RouteMetadata is the matched route's metadata
	// (%METADATA(ROUTE:...)%); VirtualHostMetadata its virtual host's
	// (%METADATA(VIRTUAL_HOST:...)%); ListenerMetadata the listener's
	// (%METADATA(LISTENER:...)%).
	RouteMetadata, VirtualHostMetadata, ListenerMetadata *corev3.Metadata
}
