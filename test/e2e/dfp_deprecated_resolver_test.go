package e2e

import (
	"fmt"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Dynamic forward proxy DNS cache deprecated resolver fields", func() {
	It("reads dns_resolution_config as a c-ares resolver (its use_tcp_for_dns_lookups too), with a deprecation warning", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1")
		serveHost(lns[0], "A", nil)
		dns.set("alpha.test", "127.0.0.1")

		dir := newDir()
		port := freePort()
		cache := fmt.Sprintf(`{name: legacy, dns_lookup_family: V4_ONLY, dns_resolution_config: {resolvers: [{socket_address: {address: 127.0.0.1, port_value: %d}}], dns_resolver_options: {use_tcp_for_dns_lookups: true, no_default_search_domain: true}}}`, dns.port)
		s := Start(dir, bootstrapOf(
			[]string{dfpListener("front", port, cache, "dfp", "x", filepath.Join(dir, "access.log"))},
			[]string{dfpCluster("dfp", cache, "")}))

		code, body := dfpRequest(port, fmt.Sprintf("alpha.test:%d", up), "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("A "))
		Expect(dns.tcpQueries.Load()).To(BeNumerically(">", 0), "the queries go over TCP")
		Expect(dns.tcpQueries.Load()).To(Equal(dns.queries.Load()), "and only over TCP")
		Expect(s.Stderr()).To(ContainSubstring("Using deprecated option 'envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.dns_resolution_config'"))
		// The listener's filter and the cluster both carry the cache.
		Expect(statValue(s, "runtime.deprecated_feature_use")).To(Equal("2"))
	})

	It("uses the bootstrap's typed resolver, as Envoy, for a cache with only use_tcp_for_dns_lookups", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1")
		serveHost(lns[0], "A", nil)
		dns.set("alpha.test", "127.0.0.1")

		dir := newDir()
		port := freePort()
		cache := `{name: legacy_tcp, dns_lookup_family: V4_ONLY, use_tcp_for_dns_lookups: true}`
		b := bootstrapOf(
			[]string{dfpListener("front", port, cache, "dfp", "x", filepath.Join(dir, "access.log"))},
			[]string{dfpCluster("dfp", cache, "")})
		b = b[:len(b)-1] + ", typed_dns_resolver_config: " + caresResolver(dns.port, "") + "}"
		s := Start(dir, b)

		code, body := dfpRequest(port, fmt.Sprintf("alpha.test:%d", up), "/")
		Expect(code).To(Equal(200), body)
		Expect(dns.queries.Load()).To(BeNumerically(">", 0))
		Expect(dns.tcpQueries.Load()).To(BeZero(), "the bootstrap's resolver speaks UDP")
		Expect(s.Stderr()).To(ContainSubstring("Using deprecated option 'envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig.use_tcp_for_dns_lookups'"))
	})
})
