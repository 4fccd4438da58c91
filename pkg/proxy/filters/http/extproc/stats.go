package extproc

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// filterStats are the filter's counters, Envoy's
// http.<stat_prefix>.ext_proc.[<filter stat_prefix>.]*.
type filterStats struct {
	streamsStarted, msgsSent, msgsReceived, spuriousMsgs          *stats.Counter
	streamsClosed, streamsFailed, failureModeAllowed, msgTimeouts *stats.Counter
	rejectedMutations, overrideTimeoutReceived                    *stats.Counter
	overrideTimeoutIgnored, clearRouteCacheIgnored                *stats.Counter
	clearRouteCacheDisabled, clearRouteCacheUpstreamIgnored       *stats.Counter
	// httpNotOK counts the http_service exchanges that failed.
	httpNotOK *stats.Counter
}

// newFilterStats makes the counters under prefix.
func newFilterStats(store *stats.Store, prefix string) filterStats {
	return filterStats{
		streamsStarted:          store.Counter(prefix + "streams_started"),
		msgsSent:                store.Counter(prefix + "stream_msgs_sent"),
		msgsReceived:            store.Counter(prefix + "stream_msgs_received"),
		spuriousMsgs:            store.Counter(prefix + "spurious_msgs_received"),
		streamsClosed:           store.Counter(prefix + "streams_closed"),
		streamsFailed:           store.Counter(prefix + "streams_failed"),
		failureModeAllowed:      store.Counter(prefix + "failure_mode_allowed"),
		msgTimeouts:             store.Counter(prefix + "message_timeouts"),
		rejectedMutations:       store.Counter(prefix + "rejected_header_mutations"),
		overrideTimeoutReceived: store.Counter(prefix + "override_message_timeout_received"),
		overrideTimeoutIgnored:  store.Counter(prefix + "override_message_timeout_ignored"),
		clearRouteCacheIgnored:  store.Counter(prefix + "clear_route_cache_ignored"),
		clearRouteCacheDisabled: store.Counter(prefix + "clear_route_cache_disabled"),
		// Upstream, no route is cleared (see clearRouteCache).
		clearRouteCacheUpstreamIgnored: store.Counter(prefix + "clear_route_cache_upstream_ignored"),
		httpNotOK:                      store.Counter(prefix + "http_not_ok_resp_received"),
	}
}
