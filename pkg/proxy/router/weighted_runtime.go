package router

import "github.com/outrigger-dev/outrigger/pkg/proxy/runtime"

// PickClusterWith is PickCluster with the runtime: a weighted_clusters
// action with runtime_key_prefix takes each cluster's weight from the
// runtime key <prefix>.<cluster name> when it is set (the configured
// weight otherwise), read again for every request as Envoy reads it. A
// runtime that sets every weight to 0 leaves the configured ones.
func (r *Route) PickClusterWith(random uint64, rt runtime.Reader) (name string, index int) {
	w := r.WeightedClusters
	if w == nil || w.runtimePrefix == "" || rt == nil {
		return r.PickCluster(random)
	}
	var total uint64
	for i := range w.Clusters {
		total += w.runtimeWeight(i, rt)
	}
	if total == 0 {
		return r.PickCluster(random)
	}
	v := random % total
	var end uint64
	for i := range w.Clusters {
		end += w.runtimeWeight(i, rt)
		if v < end {
			return w.Clusters[i].Name, i
		}
	}
	// Unreachable: the weights add up to total.
	last := len(w.Clusters) - 1
	return w.Clusters[last].Name, last
}

// runtimeWeight is cluster i's weight as the runtime sets it.
func (w *WeightedClusters) runtimeWeight(i int, rt runtime.Reader) uint64 {
	c := &w.Clusters[i]
	if c.runtimeKey == "" {
		return uint64(c.Weight)
	}
	return rt.Uint64(c.runtimeKey, uint64(c.Weight))
}
