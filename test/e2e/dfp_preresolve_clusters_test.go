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
