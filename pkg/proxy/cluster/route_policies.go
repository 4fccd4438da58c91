package cluster

import "github.com/outrigger-dev/outrigger/pkg/proxy/router"

// RoutePolicies are the route policies of the cluster's HTTP protocol
// options (retry_policy, hash_policy, request_mirror_policies), which
// replace the route's for the requests routed to it; nil when it has none.
func (c *Cluster) RoutePolicies() *router.ClusterPolicies { return c.settings.protocol.routePolicies }
