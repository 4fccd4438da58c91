package dnscache

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// cacheStats are Envoy's dns_cache.<name>.* stats.
type cacheStats struct {
	cacheLoad       *stats.Counter
	queryAttempt    *stats.Counter
	queryFailure    *stats.Counter
	querySuccess    *stats.Counter
	queryTimeout    *stats.Counter
	pendingOverflow *stats.Counter
	// addressFilterOut counts the resolved addresses
	// resolved_address_filter dropped.
	addressFilterOut   *stats.Counter
	hostAdded          *stats.Counter
	hostAddressChanged *stats.Counter
	hostOverflow       *stats.Counter
	hostRemoved        *stats.Counter
	numHosts           *stats.Gauge
	// The circuit breaker's gauges (circuit_breakers.rq_pending_open and
	// rq_pending_remaining).
	pendingOpen      *stats.Gauge
	pendingRemaining *stats.Gauge
}

func newCacheStats(store *stats.Store, name string, maxPending int64) cacheStats {
	sc := store.Scope("dns_cache." + name + ".")
	cb := sc.Scope("circuit_breakers.")
	st := cacheStats{
		// cache_load counts the hosts loaded from the key-value store.
		cacheLoad:          sc.Counter("cache_load"),
		queryAttempt:       sc.Counter("dns_query_attempt"),
		queryFailure:       sc.Counter("dns_query_failure"),
		querySuccess:       sc.Counter("dns_query_success"),
		queryTimeout:       sc.Counter("dns_query_timeout"),
		pendingOverflow:    sc.Counter("dns_rq_pending_overflow"),
		addressFilterOut:   sc.Counter("dns_address_filter_out"),
		hostAdded:          sc.Counter("host_added"),
		hostAddressChanged: sc.Counter("host_address_changed"),
		hostOverflow:       sc.Counter("host_overflow"),
		hostRemoved:        sc.Counter("host_removed"),
		numHosts:           sc.Gauge("num_hosts"),
		pendingOpen:        cb.Gauge("rq_pending_open"),
		pendingRemaining:   cb.Gauge("rq_pending_remaining"),
	}
	st.pendingChanged(0, maxPending)
	return st
}

// pendingChanged updates the breaker's gauges for n pending requests.
func (st *cacheStats) pendingChanged(n, limit int64) {
	open := int64(0)
	if n >= limit {
		open = 1
	}
	st.pendingOpen.Set(open)
	st.pendingRemaining.Set(max(limit-n, 0))
}
