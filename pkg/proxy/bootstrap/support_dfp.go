package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedDFP lists the fields of the dynamic forward proxy: its DNS
// cache, the dynamic_forward_proxy cluster type, the HTTP filter, the SNI
// network filter, and sni_cluster (which has no field).
var supportedDFP = map[protoreflect.FullName]fieldSupport{
	// Custom cluster types (cluster_type); the builder refuses the ones
	// Outrigger does not build.
	"envoy.config.cluster.v3.Cluster.cluster_type":                   {},
	"envoy.config.cluster.v3.Cluster.CustomClusterType.name":         {},
	"envoy.config.cluster.v3.Cluster.CustomClusterType.typed_config": {category: "envoy.clusters", byName: true},

	// envoy.clusters.dynamic_forward_proxy (allow_coalesced_connections
	// true is refused by the cluster builder).
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig.dns_cache_config":               {},
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig.allow_insecure_cluster_options": {},
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig.allow_coalesced_connections":    {},
	// Sub-clusters: preresolve_clusters are made when the cluster
	// starts; with dns_cluster_config (a DnsCluster, whose fields are
	// listed with the cluster's) they are of the DNS cluster extension.
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig.sub_clusters_config":     {},
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.SubClustersConfig.lb_policy":           {},
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.SubClustersConfig.max_sub_clusters":    {},
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.SubClustersConfig.sub_cluster_ttl":     {},
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.SubClustersConfig.preresolve_clusters": {},
	"envoy.extensions.clusters.dynamic_forward_proxy.v3.SubClustersConfig.dns_cluster_config":  {},

	// The DNS cache.
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.name":                           {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_lookup_family":              {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_refresh_rate":               {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_min_refresh_rate":           {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.host_ttl":                       {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.max_hosts":                      {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.disable_dns_refresh_on_failure": {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_failure_refresh_rate":       {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_cache_circuit_breaker":      {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.typed_dns_resolver_config":      {},
	// The deprecated resolver fields, read as Envoy reads them (with a
	// deprecation warning): dns_resolution_config is a c-ares resolver;
	// use_tcp_for_dns_lookups applies to the c-ares resolver a cache
	// without either builds when the bootstrap has no typed resolver.
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_resolution_config":         {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.use_tcp_for_dns_lookups":       {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.preresolve_hostnames":          {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_query_timeout":             {},
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheCircuitBreakers.max_pending_requests": {},
	// resolved_address_filter: the AddressMatcher's fields are listed
	// with the route's (support_route.go).
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.resolved_address_filter": {},
	// key_value_config: the resolutions kept in a key-value store
	// (envoy.key_value.file_based), loaded when the cache is made.
	"envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.key_value_config":     {},
	"envoy.config.common.key_value.v3.KeyValueStoreConfig.config":                          {},
	"envoy.extensions.key_value.file_based.v3.FileBasedKeyValueStoreConfig.filename":       {},
	"envoy.extensions.key_value.file_based.v3.FileBasedKeyValueStoreConfig.flush_interval": {},
	"envoy.extensions.key_value.file_based.v3.FileBasedKeyValueStoreConfig.max_entries":    {},

	// envoy.filters.http.dynamic_forward_proxy.
	"envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig.dns_cache_config":                     {},
	"envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig.save_upstream_address":                {},
	"envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig.allow_dynamic_host_from_filter_state": {},
	"envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig.sub_cluster_config":                   {},
	"envoy.extensions.filters.http.dynamic_forward_proxy.v3.SubClusterConfig.cluster_init_timeout":             {},
	"envoy.extensions.filters.http.dynamic_forward_proxy.v3.PerRouteConfig.host_rewrite_literal":               {},
	"envoy.extensions.filters.http.dynamic_forward_proxy.v3.PerRouteConfig.host_rewrite_header":                {},

	// envoy.filters.network.sni_dynamic_forward_proxy.
	"envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig.dns_cache_config":      {},
	"envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig.port_value":            {},
	"envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig.save_upstream_address": {},
}
