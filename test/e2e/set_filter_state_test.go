package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// setFilterStateValue is a set_filter_state FilterStateValue (YAML flow)
// whose object is made by factory ("" for the key's own) from format.
func setFilterStateValue(key, factory, format, extra string) string {
	fk := ""
	if factory != "" {
		fk = ", factory_key: " + factory
	}
	return fmt.Sprintf(`{object_key: %s%s, format_string: {omit_empty_values: true, text_format_source: {inline_string: %q}}%s}`, key, fk, format, extra)
}

var _ = Describe("set_filter_state", func() {
	It("routes tcp_proxy connections to the cluster a format of the server name picks, which the access log shows and RBAC reads", func() {
		ca, err := tlstest.NewCA("set_filter_state CA")
		Expect(err).NotTo(HaveOccurred())
		leaf, err := ca.Issue(tlstest.Options{CommonName: "upstream", DNS: []string{"alpha.test", "beta.test"}})
		Expect(err).NotTo(HaveOccurred())
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		Expect(err).NotTo(HaveOccurred())
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2", "127.0.0.3")
		for i, name := range []string{"A", "B", "C"} {
			serveTLSName(lns[i], name, cert)
		}

		dir := newDir()
		logPath := filepath.Join(dir, "tcp.log")
		port := freePort()
		sfs := fmt.Sprintf(`{name: envoy.filters.network.set_filter_state, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.set_filter_state.v3.Config,
			on_new_connection: [%s, %s]}}`,
			setFilterStateValue("envoy.tcp_proxy.cluster", "", "backend-%REQUESTED_SERVER_NAME%", ""),
			setFilterStateValue("acme.sni", "envoy.string", "%REQUESTED_SERVER_NAME%", ", skip_if_empty: true"))
		rbac := `{name: envoy.filters.network.rbac, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC, stat_prefix: sfs_rbac,
			rules: {action: DENY, policies: {blocked: {permissions: [{any: true}], principals: [{filter_state: {key: acme.sni, string_match: {exact: blocked.test}}}]}}}}}`
		listener := fmt.Sprintf(`{name: sfs, address: {socket_address: {address: 127.0.0.1, port_value: %d}},
			listener_filters: [{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}],
			filter_chains: [{filters: [%s, %s, {name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: sfs, cluster: fallback,
				access_log: [{name: envoy.access_loggers.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: %q,
					log_format: {text_format_source: {inline_string: "%%FILTER_STATE(envoy.tcp_proxy.cluster:PLAIN)%% %%UPSTREAM_CLUSTER%% %%FILTER_STATE(acme.sni)%%\n"}}}}]}}]}]}`,
			port, sfs, rbac, logPath)
		s := Start(dir, bootstrapOf([]string{listener}, []string{
			staticCluster("backend-alpha.test", "127.0.0.1", up),
			staticCluster("backend-beta.test", "127.0.0.2", up),
			staticCluster("fallback", "127.0.0.3", up),
		}), "--file-flush-interval-msec", "50")

		By("the server name picks the cluster through envoy.tcp_proxy.cluster")
		Expect(tlsThrough(port, "beta.test")).To(Equal("B sni=beta.test"))
		Expect(tlsThrough(port, "alpha.test")).To(Equal("A sni=alpha.test"))
		Expect(statValue(s, "cluster.backend-beta.test.upstream_cx_total")).To(Equal("1"))
		By("without a server name the format makes backend-, which names no cluster")
		_, err = tlsThrough(port, "")
		Expect(err).To(HaveOccurred())
		Expect(statValue(s, "tcp.sfs.downstream_cx_no_route")).To(Equal("1"))
		Expect(statValue(s, "cluster.fallback.upstream_cx_total")).To(Equal("0"))

		By("RBAC's filter_state principal sees the connection's object")
		_, err = tlsThrough(port, "blocked.test")
		Expect(err).To(HaveOccurred())
		Expect(statValue(s, "sfs_rbac.rbac.denied")).To(Equal("1"))
		Expect(statValue(s, "sfs_rbac.rbac.allowed")).To(Equal("3"))

		By("the access log shows the objects")
		Eventually(func() string { return readFile(logPath) }).Should(And(
			ContainSubstring("backend-beta.test backend-beta.test \"beta.test\"\n"),
			ContainSubstring("backend-alpha.test backend-alpha.test \"alpha.test\"\n"),
			// skip_if_empty left no acme.sni.
			ContainSubstring("backend- backend- -\n"),
			ContainSubstring("backend-blocked.test - \"blocked.test\"\n")))
	})

	It("sets a request's filter state from its headers, for route filter_state matchers, the ORIGINAL_DST cluster and the access log", func() {
		gold, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		rest, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		direct, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		serveHost(gold, "gold", nil)
		serveHost(rest, "rest", nil)
		serveHost(direct, "direct", nil)

		dir := newDir()
		logPath := filepath.Join(dir, "http.log")
		port := freePort()
		listener := fmt.Sprintf(`{name: http, address: {socket_address: {address: 127.0.0.1, port_value: %d}},
			filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
				stat_prefix: sfs,
				access_log: [{name: envoy.access_loggers.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: %q,
					log_format: {text_format_source: {inline_string: "%%REQ(:PATH)%% %%FILTER_STATE(acme.tenant:PLAIN)%% %%FILTER_STATE(envoy.network.transport_socket.original_dst_address:FIELD:port)%% %%UPSTREAM_CLUSTER%%\n"}}}}],
				http_filters: [
					{name: envoy.filters.http.set_filter_state, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.set_filter_state.v3.Config, clear_route_cache: true,
						on_request_headers: [%s, %s]}},
					{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
				route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [
					{match: {prefix: /direct}, route: {cluster: orig}},
					{match: {prefix: /, filter_state: [{key: acme.tenant, string_match: {prefix: gold-}}]}, route: {cluster: gold}},
					{match: {prefix: /}, route: {cluster: rest}}]}]}}}]}]}`,
			port, logPath,
			setFilterStateValue("acme.tenant", "envoy.string", "%REQ(x-tenant)%", ", skip_if_empty: true"),
			setFilterStateValue("envoy.network.transport_socket.original_dst_address", "", "%REQ(x-dst)%", ", skip_if_empty: true"))
		s := Start(dir, bootstrapOf([]string{listener}, []string{
			staticCluster("gold", "127.0.0.1", gold.Addr().(*net.TCPAddr).Port),
			staticCluster("rest", "127.0.0.1", rest.Addr().(*net.TCPAddr).Port),
			`{name: orig, type: ORIGINAL_DST, lb_policy: CLUSTER_PROVIDED, connect_timeout: 2s}`,
		}), "--file-flush-interval-msec", "50")

		By("the route's filter_state matcher sees the header's value")
		code, body := dfpRequest(port, "h", "/a", "x-tenant", "gold-7")
		Expect(code).To(Equal(200))
		Expect(body).To(HavePrefix("gold "))
		code, body = dfpRequest(port, "h", "/b", "x-tenant", "silver")
		Expect(code).To(Equal(200))
		Expect(body).To(HavePrefix("rest "))
		code, body = dfpRequest(port, "h", "/c")
		Expect(code).To(Equal(200))
		Expect(body).To(HavePrefix("rest "))

		By("the ORIGINAL_DST cluster connects to the address the filter state holds")
		directPort := direct.Addr().(*net.TCPAddr).Port
		code, body = dfpRequest(port, "h", "/direct", "x-dst", fmt.Sprintf("127.0.0.1:%d", directPort))
		Expect(code).To(Equal(200))
		Expect(body).To(HavePrefix("direct "))
		Expect(statValue(s, "cluster.orig.upstream_rq_total")).To(Equal("1"))

		By("the access log shows the request's objects")
		Eventually(func() string { return readFile(logPath) }).Should(And(
			ContainSubstring("/a gold-7 - gold\n"),
			ContainSubstring("/b silver - rest\n"),
			ContainSubstring("/c - - rest\n"),
			ContainSubstring(fmt.Sprintf("/direct - %d orig\n", directPort))))
	})

	It("refuses a key without an object factory at load, naming the field", func() {
		listener := fmt.Sprintf(`{name: sfs, address: {socket_address: {address: 127.0.0.1, port_value: %d}},
			filter_chains: [{filters: [{name: envoy.filters.network.set_filter_state, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.set_filter_state.v3.Config,
				on_new_connection: [%s]}},
				{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: sfs, cluster: c}}]}]}`,
			freePort(), setFilterStateValue("acme.custom", "", "x", ""))
		r, _ := validate("b.yaml", bootstrapOf([]string{listener}, []string{staticCluster("c", "127.0.0.1", 1)}))
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stdout + r.Stderr).To(ContainSubstring("on_new_connection[0].object_key: 'acme.custom' does not have an object factory"))
	})
})
