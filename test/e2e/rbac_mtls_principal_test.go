package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// mtlsPrincipal is RBAC's mtls_authenticated principal (a YAML flow item)
// with the given Config fields.
func mtlsPrincipal(fields string) string {
	return `{custom: {name: envoy.rbac.principals.mtls_authenticated, typed_config: {"@type": type.googleapis.com/envoy.extensions.rbac.principals.mtls_authenticated.v3.Config, ` + fields + `}}}`
}

var _ = Describe("RBAC's mtls_authenticated principal", func() {
	It("admits a validated client certificate whose SAN matches (network filter), and any validated one but not one ACCEPT_UNTRUSTED let through (HTTP filter)", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		up := startTCPServer(echo)
		netPort, httpPort := freePort(), freePort()

		// A client certificate of another CA, which ACCEPT_UNTRUSTED
		// lets through the handshake unvalidated.
		otherCA, err := tlstest.NewCA("Stranger CA")
		Expect(err).NotTo(HaveOccurred())
		stranger, err := otherCA.Issue(tlstest.Options{CommonName: "stranger", URIs: []string{clientSAN}, Client: true})
		Expect(err).NotTo(HaveOccurred())
		strangerCert, strangerKey := filepath.Join(dir, "stranger.pem"), filepath.Join(dir, "stranger-key.pem")
		Expect(os.WriteFile(strangerCert, stranger.CertPEM, 0o600)).To(Succeed())
		Expect(os.WriteFile(strangerKey, stranger.KeyPEM, 0o600)).To(Succeed())

		netRBAC := `{name: envoy.filters.network.rbac, typed_config: ` + withType(netRBACType, `{stat_prefix: mesh, rules: {action: ALLOW, policies: {
    frontend: {permissions: [{any: true}], principals: [`+mtlsPrincipal(`san_matcher: {san_type: URI, matcher: {exact: "`+clientSAN+`"}}`)+`]}}}}`) + `}`
		tcpProxy := `{name: envoy.filters.network.tcp_proxy, typed_config: ` + withType("type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy", `{stat_prefix: front, cluster: echo}`) + `}`
		hcm := `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: web,
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: validated}}}]}]},
  http_filters: [` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{rules: {action: ALLOW, policies: {
    validated: {permissions: [{any: true}], principals: [`+mtlsPrincipal(`any_validated_client_certificate: true`)+`]}}}}`) + `,
    {name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: net
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [{filters: [%s, %s], transport_socket: %s}]
  - name: web
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [{filters: [%s], transport_socket: %s}]
`, tcpCluster("echo", up),
			netPort, netRBAC, tcpProxy, f.transportSocket("", `, validation_context: {trusted_ca: {filename: `+f.ca+`}}`),
			httpPort, hcm, f.transportSocket("", `, validation_context: {trusted_ca: {filename: `+f.ca+`}, trust_chain_verification: ACCEPT_UNTRUSTED}`))
		s := Start(dir, cfg)

		config := func(cert, key string) *tls.Config {
			GinkgoHelper()
			c := &tls.Config{RootCAs: f.caPool, ServerName: "localhost"}
			if cert != "" {
				pair, err := tls.LoadX509KeyPair(cert, key)
				Expect(err).NotTo(HaveOccurred())
				c.Certificates = []tls.Certificate{pair}
			}
			return c
		}
		dial := func(cert, key string) *tls.Conn {
			GinkgoHelper()
			c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", netPort), config(cert, key))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = c.Close() })
			Expect(c.SetDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
			return c
		}

		// Network filter: the frontend's validated certificate with the
		// SAN passes; the intruder's (same CA, another SAN) and none are
		// closed.
		expectEcho(dial(f.clientCert, f.clientKey))
		expectClosedSilently(dial(f.otherClientCert, f.otherClientKy))
		expectClosedSilently(dial("", ""))
		Expect(statValue(s, "mesh.rbac.allowed")).To(Equal("1"))
		Expect(statValue(s, "mesh.rbac.denied")).To(Equal("2"))

		// HTTP filter: any validated certificate passes; the stranger's,
		// which ACCEPT_UNTRUSTED let through unvalidated, is denied even
		// with the same SAN.
		get := func(cert, key string) (int, string) {
			GinkgoHelper()
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: config(cert, key)}}
			r := httpDo(client, "GET", fmt.Sprintf("https://127.0.0.1:%d/", httpPort), nil, nil)
			return r.Status, r.Body
		}
		code, body := get(f.otherClientCert, f.otherClientKy)
		Expect(code).To(Equal(200))
		Expect(body).To(Equal("validated"))
		code, body = get(strangerCert, strangerKey)
		Expect(code).To(Equal(403))
		Expect(body).To(Equal("RBAC: access denied"))
		code, _ = get("", "")
		Expect(code).To(Equal(403))
		Expect(statValue(s, "http.web.rbac.allowed")).To(Equal("1"))
		Expect(statValue(s, "http.web.rbac.denied")).To(Equal("2"))
	})

	It("refuses another principal extension and a configuration that validates nothing, with their paths", func() {
		up := startTCPServer(echo)
		cfg := rbacTCPBootstrap(up, freePort(), `{stat_prefix: a, rules: {policies: {p: {permissions: [{any: true}], principals: [`+mtlsPrincipal(`any_validated_client_certificate: false`)+`]}}}}`,
			freePort(), `{stat_prefix: b, rules: {policies: {p: {permissions: [{any: true}], principals: [{custom: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}]}}}}`)
		r, _ := validate("bootstrap.yaml", cfg)
		Expect(r.ExitCode).NotTo(BeZero())
		Expect(r.Stderr).To(ContainSubstring(`static_resources.listeners[0].filter_chains[0].filters[0].typed_config.rules.policies["p"].principals[0].custom.typed_config: envoy.rbac.principals.mtls_authenticated did not have any configured validation`))
		Expect(r.Stderr).To(ContainSubstring(`static_resources.listeners[1].filter_chains[0].filters[0].typed_config.rules.policies["p"].principals[0].custom.typed_config`))
	})
})
