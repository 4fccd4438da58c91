// Package dnscache is the DNS cache of Envoy's dynamic forward proxy
// (envoy.common.dynamic_forward_proxy's DnsCacheConfig): the host names
// requests ask for, each resolved on first use, kept fresh while used and
// forgotten once unused for host_ttl. The HTTP dynamic_forward_proxy filter
// and the SNI dynamic forward proxy network filter load names into a cache;
// the dynamic_forward_proxy cluster type follows the cache's hosts (see
// Subscriber) and connects to them.
//
// Caches are shared by name through a Manager, as Envoy's DNS cache
// manager shares them: every configuration naming a cache must give it the
// same settings. Stats are Envoy's, under dns_cache.<name>.
package dnscache

// The dynamic forward proxy cluster type's extension category and name
// (cluster_type; the envoy. spelling works too). The cluster manager
// builds these clusters itself.
const (
	ClusterTypeCategory = "envoy.clusters"
	ClusterTypeName     = "proxy.clusters.dynamic_forward_proxy"
)
