package cluster

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	clusterprovidedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/cluster_provided/v3"
)

// typedClusterProvided reports whether c's load_balancing_policy is the
// typed cluster_provided policy (its first policy, the one Envoy uses):
// the cluster type's own balancer, as lb_policy CLUSTER_PROVIDED.
func typedClusterProvided(c *clusterv3.Cluster) bool {
	ps := c.GetLoadBalancingPolicy().GetPolicies()
	return len(ps) > 0 && ps[0].GetTypedExtensionConfig().GetTypedConfig().MessageIs(&clusterprovidedv3.ClusterProvided{})
}

// otherPolicyOnProvider reports whether c, of a type that brings its own
// balancer, has a load_balancing_policy other than cluster_provided.
func otherPolicyOnProvider(c *clusterv3.Cluster) bool {
	return c.GetLoadBalancingPolicy() != nil && !typedClusterProvided(c)
}
