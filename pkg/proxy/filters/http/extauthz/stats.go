package extauthz

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// filterStats are the filter's counters, http.<stat_prefix>.ext_authz.*.
type filterStats struct {
	ok, denied, error, disabled, failureModeAllowed *stats.Counter
}

// clusterStats are the counters Envoy keeps per route cluster.
type clusterStats struct {
	ok, denied, error, failureModeAllowed *stats.Counter
}

// newFilterStats makes the counters under prefix.
func newFilterStats(store *stats.Store, prefix string) filterStats {
	return filterStats{
		ok:                 store.Counter(prefix + "ok"),
		denied:             store.Counter(prefix + "denied"),
		error:              store.Counter(prefix + "error"),
		disabled:           store.Counter(prefix + "disabled"),
		failureModeAllowed: store.Counter(prefix + "failure_mode_allowed"),
	}
}

// clusterStats returns the counters of the route's cluster.
func (c *config) clusterStats(name string) *clusterStats {
	if v, ok := c.clusters.Load(name); ok {
		return v.(*clusterStats)
	}
	p := "cluster." + name + "." + c.prefix
	cs := &clusterStats{
		ok:                 c.store.Counter(p + "ok"),
		denied:             c.store.Counter(p + "denied"),
		error:              c.store.Counter(p + "error"),
		failureModeAllowed: c.store.Counter(p + "failure_mode_allowed"),
	}
	v, _ := c.clusters.LoadOrStore(name, cs)
	return v.(*clusterStats)
}
