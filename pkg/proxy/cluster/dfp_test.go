package cluster

import (
	"strings"
	"testing"

	dnsclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dns/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// dfpYAML is a dynamic_forward_proxy cluster with extra cluster fields and
// extra ClusterConfig fields.
func dfpYAML(cluster, config string) string {
	return `
- name: dfp
  lb_policy: CLUSTER_PROVIDED
  cluster_type:
    name: envoy.clusters.dynamic_forward_proxy
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig
      dns_cache_config: {name: c}` + config + cluster
}

func dfpRegistry(t *testing.T) *extension.Registry {
	t.Helper()
	reg, err := extension.New(
		extension.Of(dnscache.ClusterTypeName, dnscache.ClusterTypeCategory, &dfpclusterv3.ClusterConfig{}, nil),
		// The DNS cluster extension, which dns_cluster_config's
		// sub-clusters are of.
		extension.Of("proxy.clusters.dns", dnscache.ClusterTypeCategory, &dnsclusterv3.DnsCluster{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestDynamicForwardProxyClusterErrors(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want string
	}{
		"lb_policy": {
			yaml: strings.Replace(dfpYAML("", ""), "lb_policy: CLUSTER_PROVIDED", "lb_policy: ROUND_ROBIN", 1),
			want: "static_resources.clusters[0].lb_policy: LB policy ROUND_ROBIN is not valid for Cluster type envoy.clusters.dynamic_forward_proxy",
		},
		"coalesced connections": {
			yaml: dfpYAML("", "\n      allow_coalesced_connections: true"),
			want: "static_resources.clusters[0].cluster_type.typed_config.allow_coalesced_connections: not supported",
		},
		"sub clusters balanced by the cluster": {
			yaml: strings.Replace(dfpYAML("", ""), "dns_cache_config: {name: c}", "sub_clusters_config: {lb_policy: CLUSTER_PROVIDED}", 1),
			want: "static_resources.clusters[0].cluster_type.typed_config.sub_clusters_config.lb_policy: unsupported lb_policy 'CLUSTER_PROVIDED' in sub_cluster_config",
		},
		"preresolved sub cluster without a port": {
			yaml: strings.Replace(dfpYAML("", ""), "dns_cache_config: {name: c}", "sub_clusters_config: {preresolve_clusters: [{address: a.test, port_value: 80}, {address: b.test}]}", 1),
			want: "static_resources.clusters[0].cluster_type.typed_config.sub_clusters_config.preresolve_clusters[1].port_value: must be a port (1 to 65535)",
		},
		"sub clusters of the DNS cluster extension with a bad setting": {
			yaml: strings.Replace(dfpYAML("", ""), "dns_cache_config: {name: c}", "sub_clusters_config: {dns_cluster_config: {dns_min_refresh_rate: 0.5s}}", 1),
			want: "static_resources.clusters[0].cluster_type.typed_config.sub_clusters_config: its sub-clusters (DNS cluster (dns_cluster_config) copies of the cluster) would be refused: cluster_type.typed_config.dns_min_refresh_rate: must be at least 1s",
		},
		"sub clusters a STRICT_DNS cluster cannot be": {
			yaml: strings.Replace(dfpYAML("", ""), "dns_cache_config: {name: c}", "sub_clusters_config: {lb_policy: LOAD_BALANCING_POLICY_CONFIG}", 1),
			want: "static_resources.clusters[0].cluster_type.typed_config.sub_clusters_config: its sub-clusters (STRICT_DNS copies of the cluster) would be refused",
		},
		"cache without name": {
			yaml: strings.Replace(dfpYAML("", ""), "{name: c}", "{}", 1),
			want: "static_resources.clusters[0].cluster_type.typed_config.dns_cache_config.name: required",
		},
		"endpoints": {
			yaml: dfpYAML("\n  load_assignment: {cluster_name: dfp, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}}]}]}", ""),
			want: "static_resources.clusters[0].load_assignment: a dynamic_forward_proxy cluster's hosts come from its DNS cache",
		},
		"typed protocol options without allow_insecure_cluster_options": {
			yaml: dfpYAML("\n  typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {\"@type\": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http_protocol_options: {}}}}", ""),
			want: "static_resources.clusters[0].cluster_type.typed_config: dynamic_forward_proxy cluster must have auto_sni and auto_san_validation true unless allow_insecure_cluster_options is set.",
		},
		"two clusters, one cache name, other settings": {
			yaml: dfpYAML("", "") + strings.Replace(strings.Replace(dfpYAML("", ""), "name: dfp", "name: dfp2", 1), "{name: c}", "{name: c, max_hosts: 3}", 1),
			want: "static_resources.clusters[1].cluster_type.typed_config.dns_cache_config.name: config specified DNS cache 'c' with different settings",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewManager(parseClusters(t, tc.yaml), Options{Stats: stats.NewStore(), Extensions: dfpRegistry(t)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDynamicForwardProxyPick(t *testing.T) {
	m, err := NewManager(parseClusters(t, dfpYAML("", "")), Options{Stats: stats.NewStore(), Extensions: dfpRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Cluster("dfp")
	if port, ok := c.DynamicForwardProxy(); !ok || port != 80 {
		t.Fatalf("DynamicForwardProxy() = %d, %v", port, ok)
	}
	if h := c.PickHost(&upstream.PickContext{Authority: "a.test"}); h != nil {
		t.Errorf("a host before the cache has one: %v", h)
	}
	if h := c.PickHost(nil); h != nil {
		t.Errorf("a host without a downstream: %v", h)
	}
}
