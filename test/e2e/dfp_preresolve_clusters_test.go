package e2e

import (
	"fmt"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Dynamic forward proxy sub_clusters_config.preresolve_clusters", func() {
	It("makes and warms those sub-clusters at start, before any request, within max_sub_clusters", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2")
		serveHost(lns[0], "A", nil)
		serveHost(lns[1], "B", nil)
		dns.set("alpha.test", "127.0.0.1")
		dns.set("beta.test", "127.0.0.2")
		dns.set("gamma.test", "127.0.0.2")
		subAlpha, subBeta := fmt.Sprintf("DFPCluster:alpha.test:%d", up), fmt.Sprintf("DFPCluster:beta.test:%d", up)

		dir := newDir()
		port := freePort()
		pre := fmt.Sprintf("max_sub_clusters: 2, preresolve_clusters: [{address: alpha.test, port_value: %d}, {address: beta.test, port_value: %d}, {address: gamma.test, port_value: %d}]", up, up, up)
		s := Start(dir, bootstrapOf(
			[]string{subClustersListener("front", port, "sub_cluster_config: {cluster_init_timeout: 5s}", "dfp", filepath.Join(dir, "access.log"))},
			[]string{subClustersCluster("dfp", dns.port, pre)}))

		By("the sub-clusters are in /clusters with their resolved hosts, no request made")
		Eventually(func() string {
			return hostLine(s.Get("/clusters").Body, subAlpha, fmt.Sprintf("127.0.0.1:%d", up), "hostname")
		}).Should(Equal("alpha.test"))
		Eventually(func() string {
			return hostLine(s.Get("/clusters").Body, subBeta, fmt.Sprintf("127.0.0.2:%d", up), "hostname")
		}).Should(Equal("beta.test"))
		clusters := s.Get("/clusters").Body
		Expect(clusters).To(ContainSubstring(subAlpha + "::added_via_api::true"))
		Expect(clusters).NotTo(ContainSubstring("DFPCluster:gamma.test"), "max_sub_clusters 2 leaves the third out")
		Expect(statValue(s, "cluster.dfp.upstream_rq_total")).To(Equal("0"))
		Expect(statValue(s, "cluster_manager.cluster_added")).To(Equal("3"))

		By("requests use them without making new ones")
		code, body := dfpRequest(port, fmt.Sprintf("alpha.test:%d", up), "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("A "))
		code, body = dfpRequest(port, fmt.Sprintf("beta.test:%d", up), "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("B "))
		Expect(statValue(s, "cluster_manager.cluster_added")).To(Equal("3"))
		Expect(statValue(s, "cluster."+subAlpha+".upstream_rq_total")).To(Equal("1"))
	})
})

var _ = Describe("Dynamic forward proxy sub_clusters_config.dns_cluster_config", func() {
	It("makes sub-clusters of the DNS cluster extension, resolving with its settings rather than the parent's", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1")
		serveHost(lns[0], "A", nil)
		dns.set("alpha.test", "127.0.0.1")

		dir := newDir()
		port := freePort()
		// The parent has no resolver of its own: only dns_cluster_config
		// names the test's DNS server.
		parent := fmt.Sprintf(`{name: dfp, connect_timeout: 2s, lb_policy: CLUSTER_PROVIDED,
			cluster_type: {name: envoy.clusters.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig,
				sub_clusters_config: {dns_cluster_config: {dns_lookup_family: V4_ONLY, typed_dns_resolver_config: %s}}}}}`, caresResolver(dns.port, ""))
		s := Start(dir, bootstrapOf(
			[]string{subClustersListener("front", port, "sub_cluster_config: {cluster_init_timeout: 5s}", "dfp", filepath.Join(dir, "access.log"))},
			[]string{parent}))

		alpha := fmt.Sprintf("alpha.test:%d", up)
		code, body := dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("A host=" + alpha + " sni=-"))
		Expect(hostLine(s.Get("/clusters").Body, "DFPCluster:"+alpha, fmt.Sprintf("127.0.0.1:%d", up), "hostname")).To(Equal("alpha.test"))
		Expect(s.Get("/config_dump?resource=dynamic_active_clusters").Body).To(ContainSubstring("envoy.extensions.clusters.dns.v3.DnsCluster"))
	})
})
