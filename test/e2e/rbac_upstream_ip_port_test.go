package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("RBAC upstream_ip_port permission matcher", func() {
	It("denies the requests whose host the dynamic forward proxy resolved into the matcher's range and port range", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.2", "127.0.0.3")
		serveHost(lns[0], "B", nil)
		serveHost(lns[1], "C", nil)
		dns.set("beta.test", "127.0.0.2")
		dns.set("gamma.test", "127.0.0.3")
		port := freePort()
		cache := dfpCache("ipport_cache", dns.port, "")
		// DENY what resolves into 127.0.0.2/32 on the upstreams' port (a
		// closed range, its end included); the DFP filter before RBAC
		// saves each request's resolved address.
		listener := fmt.Sprintf(`{name: ipport, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
		stat_prefix: ipport,
		http_filters: [
			{name: envoy.filters.http.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig, save_upstream_address: true, dns_cache_config: %s}},
			{name: envoy.filters.http.rbac, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC, rules: {action: DENY, policies: {beta-only: {
				permissions: [{matcher: {name: envoy.rbac.matchers.upstream_ip_port, typed_config: {"@type": type.googleapis.com/envoy.extensions.rbac.matchers.upstream_ip_port.v3.UpstreamIpPortMatcher,
					upstream_ip: {address_prefix: 127.0.0.2, prefix_len: 32}, upstream_port_range: {start: %d, end: %d}}}}],
				principals: [{any: true}]}}}}},
			{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
		route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: dfp_ipport}}]}]}}}]}]}`,
			port, cache, up-1, up)
		s := Start(newDir(), bootstrapOf([]string{listener}, []string{dfpCluster("dfp_ipport", cache, "")}))

		code, body := dfpRequest(port, fmt.Sprintf("beta.test:%d", up), "/")
		Expect(code).To(Equal(403), body)
		Expect(body).To(Equal("RBAC: access denied"))
		code, body = dfpRequest(port, fmt.Sprintf("gamma.test:%d", up), "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("C "))
		Expect(statValue(s, "http.ipport.rbac.denied")).To(Equal("1"))
		Expect(statValue(s, "http.ipport.rbac.allowed")).To(Equal("1"))
	})

	It("refuses a matcher with neither an address nor a port range, naming its path", func() {
		res, _ := validate("bootstrap.yaml", proxySpec{
			Port:     freePort(),
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
			Filters: `[{name: envoy.filters.http.rbac, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC, rules: {policies: {p: {
				permissions: [{matcher: {name: m, typed_config: {"@type": type.googleapis.com/envoy.extensions.rbac.matchers.upstream_ip_port.v3.UpstreamIpPortMatcher}}}],
				principals: [{any: true}]}}}}}]`,
		}.YAML())
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("rules.policies[\"p\"].permissions[0].matcher.typed_config: Invalid UpstreamIpPortMatcher configuration - missing `upstream_ip` and/or `upstream_port_range`"))
	})
})
