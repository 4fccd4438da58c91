package upstream

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// rareCounter is one of a cluster's counters that most clusters never
// increment: timeouts, retries, connections closed with requests on them,
// resets, protocol errors, and the connections of the protocol the
// cluster does not speak. ClusterStats declares them (see
// stats.Scope.DeclareCounter): they are listed at zero like the others,
// but each costs the store 8 bytes rather than 32 until its first
// increment allocates it, which is what keeps 10,000 clusters within
// their heap budget with every stat of Envoy's cluster traffic stats.
type rareCounter uint8

const (
	rareCxConnectFail rareCounter = iota
	rareCxHTTP1Total
	rareCxHTTP2Total
	rareCxConnectTimeout
	rareCxDestroyWithActiveRq
	rareCxDestroyLocalWithActiveRq
	rareCxDestroyRemoteWithActiveRq
	rareCxCloseNotify
	rareCxProtocolError
	rareRqTimeout
	rareRqMaxDurationReached
	rareRqRxReset
	rareRqTxReset
	rareRetryOrShadowAbandoned
	rareRetry
	rareRetrySuccess
	rareRetryOverflow
	rareRetryLimitExceeded
	rareRetryBackoffExponential
	rareRetryBackoffRatelimited
	rarePerTryTimeout
	rarePerTryIdleTimeout
	rareInternalRedirectSucceeded
	rareInternalRedirectFailed
	numRareCounters
)

// name returns the counter's name in the cluster's scope.
func (r rareCounter) name() string {
	switch r {
	case rareCxConnectFail:
		return "upstream_cx_connect_fail"
	case rareCxHTTP1Total:
		return "upstream_cx_http1_total"
	case rareCxHTTP2Total:
		return "upstream_cx_http2_total"
	case rareCxConnectTimeout:
		return "upstream_cx_connect_timeout"
	case rareCxDestroyWithActiveRq:
		return "upstream_cx_destroy_with_active_rq"
	case rareCxDestroyLocalWithActiveRq:
		return "upstream_cx_destroy_local_with_active_rq"
	case rareCxDestroyRemoteWithActiveRq:
		return "upstream_cx_destroy_remote_with_active_rq"
	case rareCxCloseNotify:
		return "upstream_cx_close_notify"
	case rareCxProtocolError:
		return "upstream_cx_protocol_error"
	case rareRqTimeout:
		return "upstream_rq_timeout"
	case rareRqMaxDurationReached:
		return "upstream_rq_max_duration_reached"
	case rareRqRxReset:
		return "upstream_rq_rx_reset"
	case rareRqTxReset:
		return "upstream_rq_tx_reset"
	case rareRetryOrShadowAbandoned:
		return "retry_or_shadow_abandoned"
	case rareRetry:
		return "upstream_rq_retry"
	case rareRetrySuccess:
		return "upstream_rq_retry_success"
	case rareRetryOverflow:
		return "upstream_rq_retry_overflow"
	case rareRetryLimitExceeded:
		return "upstream_rq_retry_limit_exceeded"
	case rareRetryBackoffExponential:
		return "upstream_rq_retry_backoff_exponential"
	case rareRetryBackoffRatelimited:
		return "upstream_rq_retry_backoff_ratelimited"
	case rarePerTryTimeout:
		return "upstream_rq_per_try_timeout"
	case rarePerTryIdleTimeout:
		return "upstream_rq_per_try_idle_timeout"
	case rareInternalRedirectSucceeded:
		return "upstream_internal_redirect_succeeded_total"
	case rareInternalRedirectFailed:
		return "upstream_internal_redirect_failed_total"
	}
	return ""
}

// rare returns the cluster's rare counter r, allocating it on its first
// use; after that it is one atomic load.
func (cs *ClusterStats) rare(r rareCounter) *stats.Counter {
	if c := cs.rareCounters[r].Load(); c != nil {
		return c
	}
	return cs.rareCounters[r].Get(cs.codes.scope, r.name())
}

// UpstreamCxConnectFail counts the connections that failed to open.
func (cs *ClusterStats) UpstreamCxConnectFail() *stats.Counter { return cs.rare(rareCxConnectFail) }

// UpstreamCxHTTP1Total and UpstreamCxHTTP2Total count the connections
// opened for HTTP/1.1 and for HTTP/2: a cluster speaks one of them, so
// the other stays at zero.
func (cs *ClusterStats) UpstreamCxHTTP1Total() *stats.Counter { return cs.rare(rareCxHTTP1Total) }

// UpstreamCxHTTP2Total: see UpstreamCxHTTP1Total.
func (cs *ClusterStats) UpstreamCxHTTP2Total() *stats.Counter { return cs.rare(rareCxHTTP2Total) }

// UpstreamCxConnectTimeout counts the connections whose connect_timeout
// passed.
func (cs *ClusterStats) UpstreamCxConnectTimeout() *stats.Counter {
	return cs.rare(rareCxConnectTimeout)
}

// UpstreamCxDestroyWithActiveRq counts the connections that closed while
// a request on them had not got its whole response, split like
// UpstreamCxDestroy by who ended the connection.
func (cs *ClusterStats) UpstreamCxDestroyWithActiveRq() *stats.Counter {
	return cs.rare(rareCxDestroyWithActiveRq)
}

// UpstreamCxDestroyLocalWithActiveRq is UpstreamCxDestroyWithActiveRq
// for the connections the proxy closed.
func (cs *ClusterStats) UpstreamCxDestroyLocalWithActiveRq() *stats.Counter {
	return cs.rare(rareCxDestroyLocalWithActiveRq)
}

// UpstreamCxDestroyRemoteWithActiveRq is UpstreamCxDestroyWithActiveRq
// for the connections the host ended.
func (cs *ClusterStats) UpstreamCxDestroyRemoteWithActiveRq() *stats.Counter {
	return cs.rare(rareCxDestroyRemoteWithActiveRq)
}

// UpstreamCxCloseNotify counts the connections the host said it would
// close: an HTTP/2 GOAWAY, an HTTP/1.1 response with "connection: close"
// (or an HTTP/1.0 one without keep-alive).
func (cs *ClusterStats) UpstreamCxCloseNotify() *stats.Counter { return cs.rare(rareCxCloseNotify) }

// UpstreamCxProtocolError counts the connections closed because the host
// broke the protocol (a response that does not parse).
func (cs *ClusterStats) UpstreamCxProtocolError() *stats.Counter {
	return cs.rare(rareCxProtocolError)
}

// UpstreamRqTimeout counts the requests whose route timeout passed.
func (cs *ClusterStats) UpstreamRqTimeout() *stats.Counter { return cs.rare(rareRqTimeout) }

// UpstreamRqMaxDurationReached counts requests the cluster's
// max_stream_duration ended.
func (cs *ClusterStats) UpstreamRqMaxDurationReached() *stats.Counter {
	return cs.rare(rareRqMaxDurationReached)
}

// UpstreamRqRxReset and UpstreamRqTxReset count the HTTP/2 streams reset
// before their response was complete, by the host and by the proxy.
func (cs *ClusterStats) UpstreamRqRxReset() *stats.Counter { return cs.rare(rareRqRxReset) }

// UpstreamRqTxReset: see UpstreamRqRxReset.
func (cs *ClusterStats) UpstreamRqTxReset() *stats.Counter { return cs.rare(rareRqTxReset) }

// RetryOrShadowAbandoned counts requests whose body outgrew the buffer
// that retries and shadows keep of it.
func (cs *ClusterStats) RetryOrShadowAbandoned() *stats.Counter {
	return cs.rare(rareRetryOrShadowAbandoned)
}

// InternalRedirectSucceeded counts the upstream redirects the router
// followed itself (a route's internal_redirect_policy), Failed those of
// the policy's codes it could not follow and passed to the client.
func (cs *ClusterStats) InternalRedirectSucceeded() *stats.Counter {
	return cs.rare(rareInternalRedirectSucceeded)
}

// InternalRedirectFailed: see InternalRedirectSucceeded.
func (cs *ClusterStats) InternalRedirectFailed() *stats.Counter {
	return cs.rare(rareInternalRedirectFailed)
}

// Retries returns the router's retry accounting of the cluster (see
// RetryStats).
func (cs *ClusterStats) Retries() RetryStats { return RetryStats{cs} }

// RetryStats are a cluster's counters of retries and per-try timeouts,
// with Envoy's names.
type RetryStats struct{ cs *ClusterStats }

// Retry is upstream_rq_retry.
func (r RetryStats) Retry() *stats.Counter { return r.cs.rare(rareRetry) }

// Success is upstream_rq_retry_success.
func (r RetryStats) Success() *stats.Counter { return r.cs.rare(rareRetrySuccess) }

// Overflow is upstream_rq_retry_overflow.
func (r RetryStats) Overflow() *stats.Counter { return r.cs.rare(rareRetryOverflow) }

// LimitExceeded is upstream_rq_retry_limit_exceeded.
func (r RetryStats) LimitExceeded() *stats.Counter { return r.cs.rare(rareRetryLimitExceeded) }

// BackoffExponential is upstream_rq_retry_backoff_exponential.
func (r RetryStats) BackoffExponential() *stats.Counter {
	return r.cs.rare(rareRetryBackoffExponential)
}

// BackoffRatelimited is upstream_rq_retry_backoff_ratelimited.
func (r RetryStats) BackoffRatelimited() *stats.Counter {
	return r.cs.rare(rareRetryBackoffRatelimited)
}

// PerTryTimeout is upstream_rq_per_try_timeout.
func (r RetryStats) PerTryTimeout() *stats.Counter { return r.cs.rare(rarePerTryTimeout) }

// PerTryIdleTimeout is upstream_rq_per_try_idle_timeout.
func (r RetryStats) PerTryIdleTimeout() *stats.Counter { return r.cs.rare(rarePerTryIdleTimeout) }
