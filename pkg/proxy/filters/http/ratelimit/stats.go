package ratelimit

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// clusterStats are the counters Envoy keeps per route cluster,
// cluster.<name>.ratelimit[.<stat_prefix>].*.
type clusterStats struct {
	ok, overLimit, error, failureModeAllowed *stats.Counter
}

// clusterStats returns the counters of the route's cluster, made on first
// use.
func (c *config) clusterStats(name string) *clusterStats {
	if v, ok := c.clusters.Load(name); ok {
		return v.(*clusterStats)
	}
	p := "cluster." + name + "." + c.statPrefix
	cs := &clusterStats{
		ok:                 c.store.Counter(p + "ok"),
		overLimit:          c.store.Counter(p + "over_limit"),
		error:              c.store.Counter(p + "error"),
		failureModeAllowed: c.store.Counter(p + "failure_mode_allowed"),
	}
	v, _ := c.clusters.LoadOrStore(name, cs)
	return v.(*clusterStats)
}
