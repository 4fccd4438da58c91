package e2e

import (
	"crypto/tls"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

var _ = Describe("Dynamic forward proxy SNI filter with a sub-clusters cluster", func() {
	It("reaches a server name's sub-cluster when one exists (preresolve_clusters) and makes none itself, as Envoy", func() {
		dns := startDNSServer()
		ca, err := tlstest.NewCA("sni sub test CA")
		Expect(err).NotTo(HaveOccurred())
		leaf, err := ca.Issue(tlstest.Options{CommonName: "upstream", DNS: []string{"alpha.test", "beta.test"}})
		Expect(err).NotTo(HaveOccurred())
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		Expect(err).NotTo(HaveOccurred())
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2")
		serveTLSName(lns[0], "A", cert)
		serveTLSName(lns[1], "B", cert)
		dns.set("alpha.test", "127.0.0.1")
		dns.set("beta.test", "127.0.0.2")

		port := freePort()
		cache := dfpCache("sni_sub_cache", dns.port, "")
		sniDFP := fmt.Sprintf(`{name: envoy.filters.network.sni_dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig, port_value: %d, dns_cache_config: %s}}`, up, cache)
		s := Start(newDir(), bootstrapOf(
			[]string{tcpListener("sni_sub", port, sniDFP, "dfp_sub")},
			[]string{subClustersCluster("dfp_sub", dns.port, fmt.Sprintf("preresolve_clusters: [{address: alpha.test, port_value: %d}]", up))}))
		subAlpha := fmt.Sprintf("DFPCluster:alpha.test:%d", up)
		Eventually(func() string {
			return hostLine(s.Get("/clusters").Body, subAlpha, fmt.Sprintf("127.0.0.1:%d", up), "hostname")
		}).Should(Equal("alpha.test"))

		By("a server name with a sub-cluster (name:port_value) goes through it")
		Expect(tlsThrough(port, "alpha.test")).To(Equal("A sni=alpha.test"))
		Expect(statValue(s, "cluster."+subAlpha+".upstream_cx_total")).To(Equal("1"))

		By("one without gets no upstream: the SNI filter resolves it in its cache but makes no sub-cluster")
		_, err = tlsThrough(port, "beta.test")
		Expect(err).To(HaveOccurred())
		Expect(statValue(s, "dns_cache.sni_sub_cache.host_added")).To(Equal("2"))
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("DFPCluster:beta.test"))
		Expect(statValue(s, "cluster_manager.cluster_added")).To(Equal("2"))
	})
})
