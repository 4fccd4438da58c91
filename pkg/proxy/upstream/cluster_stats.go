package upstream

import (
	"strconv"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// ClusterStats are a cluster's stats under "cluster.<name>.", with Envoy's
// names. The connection manager updates the request stats, the pools the
// connection stats and the cluster manager the membership gauges. Each is a
// pointer into the store, so updates never look a name up.
type ClusterStats struct {
	UpstreamCxTotal          *stats.Counter
	UpstreamCxActive         *stats.Gauge
	UpstreamCxConnectFail    *stats.Counter
	UpstreamCxConnectTimeout *stats.Counter
	UpstreamCxDestroy        *stats.Counter
	// UpstreamCxDestroyLocal and UpstreamCxDestroyRemote split
	// UpstreamCxDestroy: closed by the proxy, or after the host ended the
	// connection (end of stream or reset).
	UpstreamCxDestroyLocal  *stats.Counter
	UpstreamCxDestroyRemote *stats.Counter
	// UpstreamCxDestroyWithActiveRq counts the connections that closed
	// while a request on them had not got its whole response, split
	// like UpstreamCxDestroy by who ended the connection.
	UpstreamCxDestroyWithActiveRq       *stats.Counter
	UpstreamCxDestroyLocalWithActiveRq  *stats.Counter
	UpstreamCxDestroyRemoteWithActiveRq *stats.Counter
	// UpstreamCxCloseNotify counts the connections the host said it
	// would close: an HTTP/2 GOAWAY, an HTTP/1.1 response with
	// "connection: close" (or an HTTP/1.0 one without keep-alive).
	UpstreamCxCloseNotify *stats.Counter
	// UpstreamCxProtocolError counts the connections closed because the
	// host broke the protocol (a response that does not parse).
	UpstreamCxProtocolError *stats.Counter
	// UpstreamRqPerCx records how many requests each connection carried,
	// when it closes.
	UpstreamRqPerCx      *stats.Histogram
	UpstreamCxHTTP1Total *stats.Counter
	UpstreamCxHTTP2Total *stats.Counter
	UpstreamCxConnectMs  *stats.Histogram
	UpstreamCxLengthMs   *stats.Histogram
	// UpstreamCxRxBytesTotal and UpstreamCxTxBytesTotal count the bytes
	// read from and written to the cluster's connections (after TLS, as
	// Envoy counts them); health checks' connections count in neither.
	UpstreamCxRxBytesTotal *stats.Counter
	UpstreamCxTxBytesTotal *stats.Counter
	// UpstreamCxRxBytesBuffered and UpstreamCxTxBytesBuffered are the
	// bytes read from the cluster's connections that wait in the proxy,
	// and the bytes for them that wait to be written.
	UpstreamCxRxBytesBuffered *stats.Gauge
	UpstreamCxTxBytesBuffered *stats.Gauge

	UpstreamRqTotal     *stats.Counter
	UpstreamRqActive    *stats.Gauge
	UpstreamRqCompleted *stats.Counter
	UpstreamRqTimeout   *stats.Counter
	UpstreamRqTime      *stats.Histogram
	// UpstreamRqMaxDurationReached counts requests the cluster's
	// max_stream_duration ended.
	UpstreamRqMaxDurationReached *stats.Counter
	// UpstreamRqRxReset and UpstreamRqTxReset count the HTTP/2 streams
	// reset before their response was complete, by the host and by the
	// proxy.
	UpstreamRqRxReset *stats.Counter
	UpstreamRqTxReset *stats.Counter
	// UpstreamRqPendingTotal and UpstreamRqPendingActive count the
	// HTTP/1.1 requests that waited for a connection.
	UpstreamRqPendingTotal  *stats.Counter
	UpstreamRqPendingActive *stats.Gauge
	// RetryOrShadowAbandoned counts requests whose body outgrew the
	// buffer that retries and shadows keep of it.
	RetryOrShadowAbandoned *stats.Counter
	// Retries is the router's retry accounting (see RetryStats).
	Retries RetryStats

	MembershipHealthy  *stats.Gauge
	MembershipDegraded *stats.Gauge
	MembershipExcluded *stats.Gauge
	MembershipTotal    *stats.Gauge
	MembershipChange   *stats.Counter

	// codes count responses by class and code.
	codes CodeCounters
}

// RetryStats are a cluster's counters of retries and per-try timeouts,
// with Envoy's names.
type RetryStats struct {
	Retry              *stats.Counter // upstream_rq_retry
	Success            *stats.Counter // upstream_rq_retry_success
	Overflow           *stats.Counter // upstream_rq_retry_overflow
	LimitExceeded      *stats.Counter // upstream_rq_retry_limit_exceeded
	BackoffExponential *stats.Counter // upstream_rq_retry_backoff_exponential
	BackoffRatelimited *stats.Counter // upstream_rq_retry_backoff_ratelimited
	PerTryTimeout      *stats.Counter // upstream_rq_per_try_timeout
	PerTryIdleTimeout  *stats.Counter // upstream_rq_per_try_idle_timeout
}

// init creates the retry counters under scope.
func (r *RetryStats) init(scope stats.Scope) {
	*r = RetryStats{
		Retry:              scope.Counter("upstream_rq_retry"),
		Success:            scope.Counter("upstream_rq_retry_success"),
		Overflow:           scope.Counter("upstream_rq_retry_overflow"),
		LimitExceeded:      scope.Counter("upstream_rq_retry_limit_exceeded"),
		BackoffExponential: scope.Counter("upstream_rq_retry_backoff_exponential"),
		BackoffRatelimited: scope.Counter("upstream_rq_retry_backoff_ratelimited"),
		PerTryTimeout:      scope.Counter("upstream_rq_per_try_timeout"),
		PerTryIdleTimeout:  scope.Counter("upstream_rq_per_try_idle_timeout"),
	}
}

// CodeCounters count responses by status code under a scope:
// upstream_rq_1xx .. upstream_rq_5xx, and upstream_rq_<code>. Clusters
// keep one, and so do the router's virtual clusters and route stats.
type CodeCounters struct {
	scope stats.Scope
	// class holds upstream_rq_1xx .. upstream_rq_5xx.
	class [5]*stats.Counter
	// codes holds upstream_rq_<code> for 100..599, each created on first
	// use so that only codes seen exist, as in Envoy. The table itself is
	// allocated on the first response: most of a cluster's memory would
	// otherwise be this table, even for clusters that never see traffic.
	codes atomic.Pointer[codeTable]
}

// codeTable holds one lazily created counter per status code 100..599.
type codeTable [500]atomic.Pointer[stats.Counter]

// NewClusterStats creates the stats of the cluster whose scope is
// "cluster.<name>.".
func NewClusterStats(scope stats.Scope) *ClusterStats {
	cs := &ClusterStats{
		UpstreamCxTotal:          scope.Counter("upstream_cx_total"),
		UpstreamCxActive:         scope.Gauge("upstream_cx_active"),
		UpstreamCxConnectFail:    scope.Counter("upstream_cx_connect_fail"),
		UpstreamCxConnectTimeout: scope.Counter("upstream_cx_connect_timeout"),
		UpstreamCxDestroy:        scope.Counter("upstream_cx_destroy"),
		UpstreamCxHTTP1Total:     scope.Counter("upstream_cx_http1_total"),
		UpstreamCxHTTP2Total:     scope.Counter("upstream_cx_http2_total"),
		UpstreamCxConnectMs:      scope.Histogram("upstream_cx_connect_ms", stats.UnitMilliseconds),
		UpstreamCxLengthMs:       scope.Histogram("upstream_cx_length_ms", stats.UnitMilliseconds),
		UpstreamCxRxBytesTotal:   scope.Counter("upstream_cx_rx_bytes_total"),
		UpstreamCxTxBytesTotal:   scope.Counter("upstream_cx_tx_bytes_total"),
		UpstreamRqTotal:          scope.Counter("upstream_rq_total"),
		UpstreamRqActive:         scope.Gauge("upstream_rq_active"),
		UpstreamRqCompleted:      scope.Counter("upstream_rq_completed"),
		UpstreamRqTimeout:        scope.Counter("upstream_rq_timeout"),
		UpstreamRqTime:           scope.Histogram("upstream_rq_time", stats.UnitMilliseconds),
		UpstreamRqPendingTotal:   scope.Counter("upstream_rq_pending_total"),
		UpstreamRqPendingActive:  scope.Gauge("upstream_rq_pending_active"),
		MembershipHealthy:        scope.Gauge("membership_healthy"),
		MembershipDegraded:       scope.Gauge("membership_degraded"),
		MembershipExcluded:       scope.Gauge("membership_excluded"),
		MembershipTotal:          scope.Gauge("membership_total"),
		MembershipChange:         scope.Counter("membership_change"),
	}
	cs.UpstreamRqMaxDurationReached = scope.Counter("upstream_rq_max_duration_reached")
	cs.RetryOrShadowAbandoned = scope.Counter("retry_or_shadow_abandoned")
	cs.UpstreamCxDestroyLocal = scope.Counter("upstream_cx_destroy_local")
	cs.UpstreamCxDestroyRemote = scope.Counter("upstream_cx_destroy_remote")
	cs.UpstreamCxRxBytesBuffered = scope.Gauge("upstream_cx_rx_bytes_buffered")
	cs.UpstreamCxDestroyWithActiveRq = scope.Counter("upstream_cx_destroy_with_active_rq")
	cs.UpstreamCxDestroyLocalWithActiveRq = scope.Counter("upstream_cx_destroy_local_with_active_rq")
	cs.UpstreamCxDestroyRemoteWithActiveRq = scope.Counter("upstream_cx_destroy_remote_with_active_rq")
	cs.UpstreamCxCloseNotify = scope.Counter("upstream_cx_close_notify")
	cs.UpstreamCxProtocolError = scope.Counter("upstream_cx_protocol_error")
	cs.UpstreamRqPerCx = scope.Histogram("upstream_rq_per_cx", stats.UnitUnspecified)
	cs.UpstreamRqRxReset = scope.Counter("upstream_rq_rx_reset")
	cs.UpstreamRqTxReset = scope.Counter("upstream_rq_tx_reset")
	cs.UpstreamCxTxBytesBuffered = scope.Gauge("upstream_cx_tx_bytes_buffered")
	cs.Retries.init(scope)
	cs.codes.Init(scope)
	return cs
}

// RecordResponse counts one upstream response by its status code (see
// CodeCounters.Record).
func (cs *ClusterStats) RecordResponse(code int) { cs.codes.Record(code) }

// Init creates the class counters under scope.
func (cc *CodeCounters) Init(scope stats.Scope) {
	cc.scope = scope
	for i := range cc.class {
		cc.class[i] = scope.Counter("upstream_rq_" + strconv.Itoa(i+1) + "xx")
	}
}

// Record counts one response by its status code, in the code class and
// the per-code counter. Codes outside 100..599 count in neither, as they
// cannot come from a valid response.
func (cc *CodeCounters) Record(code int) {
	if code < 100 || code > 599 {
		return
	}
	cc.class[code/100-1].Inc()
	t := cc.codes.Load()
	if t == nil {
		t = new(codeTable)
		if !cc.codes.CompareAndSwap(nil, t) {
			t = cc.codes.Load()
		}
	}
	p := &t[code-100]
	c := p.Load()
	if c == nil {
		// Racing first uses get the same counter: the store returns the
		// existing stat for a name.
		c = cc.scope.Counter("upstream_rq_" + strconv.Itoa(code))
		p.Store(c)
	}
	c.Inc()
}
