package e2e

import (
	"crypto/tls"
	"fmt"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// dfpSaveListener is an HTTP listener whose dynamic_forward_proxy filter
// saves the upstream address, logging it to logPath.
func dfpSaveListener(port int, cache, cluster, logPath string) string {
	return fmt.Sprintf(`{name: save, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
		stat_prefix: save,
		access_log: [{name: envoy.access_loggers.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: %q, log_format: {text_format_source: {inline_string: "%%REQ(:AUTHORITY)%% %%RESPONSE_CODE%% addr=%%FILTER_STATE(envoy.stream.upstream_address:PLAIN)%% ip=%%FILTER_STATE(envoy.stream.upstream_address:FIELD:ip)%%\n"}}}}],
		http_filters: [{name: envoy.filters.http.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig, save_upstream_address: true, dns_cache_config: %s}},
			{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
		route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: %s}}]}]}}}]}]}`,
		port, logPath, cache, cluster)
}

var _ = Describe("Dynamic forward proxy save_upstream_address", func() {
	It("keeps the address each request's host resolved to in the request's filter state", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.2", "127.0.0.3")
		serveHost(lns[0], "B", nil)
		serveHost(lns[1], "C", nil)
		dns.set("beta.test", "127.0.0.2")
		dns.set("gamma.test", "127.0.0.3")
		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		port := freePort()
		cache := dfpCache("save_cache", dns.port, "")
		Start(dir, bootstrapOf([]string{dfpSaveListener(port, cache, "dfp_save", logPath)}, []string{dfpCluster("dfp_save", cache, "")}),
			"--file-flush-interval-msec", "50")

		beta, gamma := fmt.Sprintf("beta.test:%d", up), fmt.Sprintf("gamma.test:%d", up)
		code, body := dfpRequest(port, beta, "/")
		Expect(code).To(Equal(200), body)
		code, body = dfpRequest(port, gamma, "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("C "))
		code, _ = dfpRequest(port, "nowhere.test", "/")
		Expect(code).To(Equal(503))
		Eventually(func() string { return readFile(logPath) }).Should(And(
			ContainSubstring(fmt.Sprintf("%s 200 addr=127.0.0.2:%d ip=127.0.0.2\n", beta, up)),
			ContainSubstring(fmt.Sprintf("%s 200 addr=127.0.0.3:%d ip=127.0.0.3\n", gamma, up)),
			ContainSubstring("nowhere.test 503 addr=- ip=-\n"),
		))
	})

	It("keeps the address the server name resolved to in the connection's filter state (sni_dynamic_forward_proxy)", func() {
		dns := startDNSServer()
		ca, err := tlstest.NewCA("sni save CA")
		Expect(err).NotTo(HaveOccurred())
		leaf, err := ca.Issue(tlstest.Options{CommonName: "upstream", DNS: []string{"beta.test"}})
		Expect(err).NotTo(HaveOccurred())
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		Expect(err).NotTo(HaveOccurred())
		lns, up := listenSamePort("127.0.0.2")
		serveTLSName(lns[0], "B", cert)
		dns.set("beta.test", "127.0.0.2")

		port := freePort()
		cache := dfpCache("sni_save", dns.port, "")
		listener := fmt.Sprintf(`{name: sni_save, address: {socket_address: {address: 127.0.0.1, port_value: %d}},
		listener_filters: [{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}],
		filter_chains: [{filters: [
			{name: envoy.filters.network.sni_dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig, port_value: %d, save_upstream_address: true, dns_cache_config: %s}},
			{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: sni_save, cluster: dfp_sni_save,
				access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, log_format: {text_format_source: {inline_string: "SNILOG %%REQUESTED_SERVER_NAME%% addr=%%FILTER_STATE(envoy.stream.upstream_address:PLAIN)%%\n"}}}}]}}]}]}`,
			port, up, cache)
		s := Start(newDir(), bootstrapOf([]string{listener}, []string{dfpCluster("dfp_sni_save", cache, "")}), "--file-flush-interval-msec", "50")

		Expect(tlsThrough(port, "beta.test")).To(Equal("B sni=beta.test"))
		_, err = tlsThrough(port, "nowhere.test")
		Expect(err).To(HaveOccurred())
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("SNILOG beta.test addr=127.0.0.2:%d\n", up)))
		Eventually(s.Stdout).Should(ContainSubstring("SNILOG nowhere.test addr=-\n"))
	})
})

var _ = Describe("Dynamic forward proxy allow_dynamic_host_from_filter_state", func() {
	It("resolves and connects to the host and port set_filter_state chose, in place of the Host", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.2", "127.0.0.3")
		serveHost(lns[0], "B", nil)
		serveHost(lns[1], "C", nil)
		dns.set("beta.test", "127.0.0.2")
		dns.set("gamma.test", "127.0.0.3")
		port := freePort()
		cache := dfpCache("fs_cache", dns.port, "")
		// The x-dest header names the host; the port is the upstreams'.
		listener := fmt.Sprintf(`{name: fs, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
		stat_prefix: fs,
		http_filters: [
			{name: envoy.filters.http.set_filter_state, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.set_filter_state.v3.Config, on_request_headers: [
				{object_key: envoy.upstream.dynamic_host, skip_if_empty: true, format_string: {omit_empty_values: true, text_format_source: {inline_string: "%%REQ(x-dest)%%"}}},
				{object_key: envoy.upstream.dynamic_port, format_string: {text_format_source: {inline_string: "%d"}}}]}},
			{name: envoy.filters.http.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig, allow_dynamic_host_from_filter_state: true, dns_cache_config: %s}},
			{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
		route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: dfp_fs}}]}]}}}]}]}`,
			port, up, cache)
		s := Start(newDir(), bootstrapOf([]string{listener}, []string{dfpCluster("dfp_fs", cache, "")}))

		By("the filter state's host wins over the Host, which goes upstream as sent")
		code, body := dfpRequest(port, "elsewhere.test", "/", "x-dest", "gamma.test")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("C host=elsewhere.test sni=-"))
		code, body = dfpRequest(port, "elsewhere.test", "/", "x-dest", "beta.test")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("B "))

		By("without a host in the filter state, the Host with the filter state's port")
		code, body = dfpRequest(port, "beta.test", "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("B host=beta.test sni=-"))

		clusters := s.Get("/clusters").Body
		Expect(hostLine(clusters, "dfp_fs", fmt.Sprintf("127.0.0.3:%d", up), "hostname")).To(Equal(fmt.Sprintf("gamma.test:%d", up)))
		Expect(hostLine(clusters, "dfp_fs", fmt.Sprintf("127.0.0.2:%d", up), "rq_total")).To(Equal("2"))
		Expect(statValue(s, "dns_cache.fs_cache.num_hosts")).To(Equal("2"), "elsewhere.test was never loaded")
	})
})
