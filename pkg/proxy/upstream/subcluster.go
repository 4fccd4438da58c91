package upstream

// SubClusterStatus is what loading the sub-cluster of a request's host
// found, on a dynamic forward proxy cluster with sub_clusters_config: the
// dynamic forward proxy filter answers by it.
type SubClusterStatus uint8

const (
	// SubClusterReady: the sub-cluster serves.
	SubClusterReady SubClusterStatus = iota
	// SubClusterWarming: the sub-cluster is being made or warms; the
	// channel returned with it is closed once it serves.
	SubClusterWarming
	// SubClusterOverflow: the cluster has max_sub_clusters sub-clusters
	// and this is not one of them.
	SubClusterOverflow
	// SubClusterFailed: the sub-cluster could not be made (its
	// configuration was refused, or its cluster is going away).
	SubClusterFailed
)
