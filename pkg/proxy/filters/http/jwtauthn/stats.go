package jwtauthn

import (
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// filterStats are Envoy's counters of the filter.
type filterStats struct {
	allowed, corsPreflightBypassed, denied *stats.Counter
	jwksFetchSuccess, jwksFetchFailed      *stats.Counter
	jwtCacheHit, jwtCacheMiss              *stats.Counter
}

// newStats makes the counters under http.<prefix>.jwt_authn.<own>: the
// connection manager's prefix ends with a dot, and Envoy's statPrefixJoin
// adds one after the filter's stat_prefix when it has none.
func newStats(store *stats.Store, prefix, own string) filterStats {
	p := prefix + "jwt_authn." + own
	if !strings.HasSuffix(p, ".") {
		p += "."
	}
	return filterStats{
		allowed:               store.Counter(p + "allowed"),
		corsPreflightBypassed: store.Counter(p + "cors_preflight_bypassed"),
		denied:                store.Counter(p + "denied"),
		jwksFetchSuccess:      store.Counter(p + "jwks_fetch_success"),
		jwksFetchFailed:       store.Counter(p + "jwks_fetch_failed"),
		jwtCacheHit:           store.Counter(p + "jwt_cache_hit"),
		jwtCacheMiss:          store.Counter(p + "jwt_cache_miss"),
	}
}
