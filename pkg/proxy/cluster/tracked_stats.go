package cluster

import clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

// trackedStats are the optional histograms a cluster asks for:
// track_cluster_stats' timeout_budgets (or the deprecated
// track_timeout_budgets, which Envoy still honours) and
// request_response_sizes (upstream.TrackedStats).
type trackedStats struct {
	timeoutBudgets, sizes bool
}

// trackedStatsOf reads them from the cluster's configuration.
func trackedStatsOf(c *clusterv3.Cluster) trackedStats {
	t := c.GetTrackClusterStats()
	return trackedStats{
		//lint:ignore SA1019 Envoy still reads the deprecated switch, OR-ed with track_cluster_stats'.
		timeoutBudgets: t.GetTimeoutBudgets() || c.GetTrackTimeoutBudgets(),
		sizes:          t.GetRequestResponseSizes(),
	}
}
