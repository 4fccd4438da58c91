package cluster

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// buildClusterType checks a cluster of a custom type (cluster_type): the
// types Outrigger builds are registered in envoy.clusters, found by the type
// of cluster_type.typed_config. Errors are relative to the cluster.
func buildClusterType(c *clusterv3.Cluster, reg *extension.Registry) (*dfpSettings, []error) {
	ct := c.GetClusterType()
	_, msg, err := reg.Resolve(extension.Ref{Kind: "cluster type", Category: dnscache.ClusterTypeCategory, Name: ct.GetName(), Config: ct.GetTypedConfig()}, true)
	if err != nil {
		return nil, fieldErrors("cluster_type.", err)
	}
	switch m := msg.(type) {
	case *dfpclusterv3.ClusterConfig:
		return buildDFP(c, m, reg)
	default:
		return nil, []error{configErrorf("cluster_type", "cluster type %q is not supported by Outrigger", ct.GetName())}
	}
}
