package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedLocality lists the fields of locality-weighted and zone-aware
// load balancing and of load-balancer subsets (pkg/proxy/lb, and
// pkg/proxy/cluster's locality.go and subset.go), and the route fields
// that choose a subset (see supportedCore).
var supportedLocality = map[protoreflect.FullName]fieldSupport{
	// The local cluster zone-aware routing compares with; the node's
	// locality is in supportedCore.
	"envoy.config.bootstrap.v3.ClusterManager.local_cluster_name": {},

	// Locality-weighted and zone-aware balancing.
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.locality_weighted_lb_config":             {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.zone_aware_lb_config":                    {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.ZoneAwareLbConfig.routing_enabled":       {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.ZoneAwareLbConfig.min_cluster_size":      {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.ZoneAwareLbConfig.fail_traffic_on_panic": {},
	// The typed round robin, least request and random policies'
	// locality_lb_config, applied as common_lb_config's.
	"envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin.locality_lb_config":                       {},
	"envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest.locality_lb_config":                   {},
	"envoy.extensions.load_balancing_policies.random.v3.Random.locality_lb_config":                                {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.zone_aware_lb_config":                    {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.locality_weighted_lb_config":             {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.ZoneAwareLbConfig.routing_enabled":       {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.ZoneAwareLbConfig.min_cluster_size":      {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.ZoneAwareLbConfig.fail_traffic_on_panic": {},
	// Local-zone routing forced, and the localities' shares by weight
	// (pkg/proxy/lb, zone.go).
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.ZoneAwareLbConfig.force_local_zone":              {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.ZoneAwareLbConfig.ForceLocalZone.min_size":       {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.ZoneAwareLbConfig.force_locality_direct_routing": {},
	"envoy.extensions.load_balancing_policies.common.v3.LocalityLbConfig.ZoneAwareLbConfig.locality_basis":                {values: []string{"HEALTHY_HOSTS_NUM", "HEALTHY_HOSTS_WEIGHT"}},

	// Load-balancer subsets, from endpoint metadata under envoy.lb.
	"envoy.config.cluster.v3.Cluster.lb_subset_config":                                       {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.fallback_policy":                         {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.default_subset":                          {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.subset_selectors":                        {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.locality_weight_aware":                   {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.scale_locality_weight":                   {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.panic_mode_any":                          {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.list_as_any":                             {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.metadata_fallback_policy":                {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.LbSubsetSelector.keys":                   {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.LbSubsetSelector.single_host_per_subset": {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.LbSubsetSelector.fallback_policy":        {},
	"envoy.config.cluster.v3.Cluster.LbSubsetConfig.LbSubsetSelector.fallback_keys_subset":   {},

	// The routes' criteria that choose a subset (pkg/proxy/router,
	// metadatamatch.go).
	"envoy.config.route.v3.RouteAction.metadata_match":                   {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.metadata_match": {},
}
