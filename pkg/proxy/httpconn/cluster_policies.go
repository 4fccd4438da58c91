package httpconn

import "github.com/outrigger-dev/outrigger/pkg/proxy/router"

// clusterPolicier is what an UpstreamCluster whose HTTP protocol options
// carry route policies (HttpProtocolOptions retry_policy, hash_policy,
// request_mirror_policies) also has. Each one it sets replaces the
// route's whole for the requests routed to the cluster, as Envoy's
// documentation says: the cluster's retry policy instead of the route's
// (or virtual host's), its hash policy for the balancer's hash key, its
// mirror policies instead of the route's.
type clusterPolicier interface {
	RoutePolicies() *router.ClusterPolicies
}

// clusterPolicies returns cl's route policies, nil when it has none.
func clusterPolicies(cl UpstreamCluster) *router.ClusterPolicies {
	if cp, ok := cl.(clusterPolicier); ok {
		return cp.RoutePolicies()
	}
	return nil
}
