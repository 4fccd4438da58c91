package oauth2

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// filterStats are Envoy's counters of the filter, under the connection
// manager's scope and the config's stat_prefix:
// http.<stat_prefix>.<filter stat_prefix>oauth_*.
type filterStats struct {
	unauthorized, failure, passthrough, success            *stats.Counter
	refreshSuccess, refreshFailure, allowFailedPassthrough *stats.Counter
}

// newFilterStats makes the counters under prefix.
func newFilterStats(store *stats.Store, prefix string) filterStats {
	return filterStats{
		unauthorized:           store.Counter(prefix + "oauth_unauthorized_rq"),
		failure:                store.Counter(prefix + "oauth_failure"),
		passthrough:            store.Counter(prefix + "oauth_passthrough"),
		success:                store.Counter(prefix + "oauth_success"),
		refreshSuccess:         store.Counter(prefix + "oauth_refreshtoken_success"),
		refreshFailure:         store.Counter(prefix + "oauth_refreshtoken_failure"),
		allowFailedPassthrough: store.Counter(prefix + "oauth_allow_failed_passthrough"),
	}
}
