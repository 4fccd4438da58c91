package cluster

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dnscommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/common/dns/v3"
	dnsclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dns/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

func TestDNSClusterTypeSettings(t *testing.T) {
	reg, err := extension.New(extension.Of("proxy.clusters.dns", dnscache.ClusterTypeCategory, &dnsclusterv3.DnsCluster{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	const endpoint = `
  load_assignment: {cluster_name: d, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: web.test, port_value: 80}}}}]}]}`
	const typed = `
  cluster_type:
    name: envoy.cluster.dns
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster`

	// Defaults: STRICT_DNS, 5 s, AUTO; the cluster's own DNS fields are
	// warnings, not settings.
	s, errs := buildSettings(parseClusters(t, `
- name: d
  dns_refresh_rate: 3s
  respect_dns_ttl: true`+typed+endpoint)[0], reg)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if s.dns == nil || s.dns.cfg.Logical || s.dns.cfg.RefreshRate != 5*time.Second || s.dns.cfg.RespectTTL || s.dns.cfg.MinRefreshRate != 0 {
		t.Fatalf("settings %+v", s.dns)
	}
	wantNotes := []string{
		"dns_refresh_rate has no effect on a cluster of type envoy.cluster.dns: the settings of cluster_type.typed_config apply (Envoy ignores it too)",
		"respect_dns_ttl has no effect on a cluster of type envoy.cluster.dns: the settings of cluster_type.typed_config apply (Envoy ignores it too)",
	}
	if diff := cmp.Diff(wantNotes, s.notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}

	// Its own settings, LOGICAL_DNS by all_addresses_in_single_endpoint.
	s, errs = buildSettings(parseClusters(t, `
- name: d`+typed+`
      dns_refresh_rate: 2s
      dns_jitter: 1s
      respect_dns_ttl: true
      dns_min_refresh_rate: 7s
      all_addresses_in_single_endpoint: true
      dns_failure_refresh_rate: {base_interval: 1s, max_interval: 4s}`+endpoint)[0], reg)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := s.dns.cfg
	if !c.Logical || c.RefreshRate != 2*time.Second || c.Jitter != time.Second || !c.RespectTTL || c.MinRefreshRate != 7*time.Second || c.Failure == nil {
		t.Fatalf("settings %+v", c)
	}

	// Errors of its settings are reported under the extension.
	_, errs = buildSettings(parseClusters(t, `
- name: d`+typed+`
      dns_failure_refresh_rate: {base_interval: 2s, max_interval: 1s}`+endpoint)[0], reg)
	if len(errs) != 1 || errs[0].Error() != "cluster_type.typed_config.dns_failure_refresh_rate.max_interval: must be greater than or equal to the base_interval" {
		t.Fatalf("errors %q", errs)
	}
}

func TestDNSClusterTypeLookupFamily(t *testing.T) {
	want := map[dnscommonv3.DnsLookupFamily]clusterv3.Cluster_DnsLookupFamily{
		dnscommonv3.DnsLookupFamily_UNSPECIFIED:  clusterv3.Cluster_AUTO,
		dnscommonv3.DnsLookupFamily_AUTO:         clusterv3.Cluster_AUTO,
		dnscommonv3.DnsLookupFamily_V4_ONLY:      clusterv3.Cluster_V4_ONLY,
		dnscommonv3.DnsLookupFamily_V6_ONLY:      clusterv3.Cluster_V6_ONLY,
		dnscommonv3.DnsLookupFamily_V4_PREFERRED: clusterv3.Cluster_V4_PREFERRED,
		dnscommonv3.DnsLookupFamily_ALL:          clusterv3.Cluster_ALL,
	}
	if len(want) != len(dnscommonv3.DnsLookupFamily_name) {
		t.Fatalf("%d families tested, the enum has %d", len(want), len(dnscommonv3.DnsLookupFamily_name))
	}
	for from, to := range want {
		if got := lookupFamily(from); got != to {
			t.Errorf("%s: %s, want %s", from, got, to)
		}
	}
}
