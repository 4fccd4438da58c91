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

var _ = Describe("Routing on the client certificate (tls_context)", func() {
	It("routes on whether the client certificate was presented and validated", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		// A client certificate of another CA, which ACCEPT_UNTRUSTED lets
		// through the handshake unvalidated.
		otherCA, err := tlstest.NewCA("Stranger CA")
		Expect(err).NotTo(HaveOccurred())
		stranger, err := otherCA.Issue(tlstest.Options{CommonName: "stranger", Client: true})
		Expect(err).NotTo(HaveOccurred())
		strangerCert, strangerKey := filepath.Join(dir, "stranger.pem"), filepath.Join(dir, "stranger-key.pem")
		Expect(os.WriteFile(strangerCert, stranger.CertPEM, 0o600)).To(Succeed())
		Expect(os.WriteFile(strangerKey, stranger.KeyPEM, 0o600)).To(Succeed())

		answer := func(body string) string { return `direct_response: {status: 200, body: {inline_string: ` + body + `}}` }
		hcm := `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: web,
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [
    {match: {prefix: /, tls_context: {presented: true, validated: true}}, ` + answer("validated") + `},
    {match: {prefix: /, tls_context: {presented: true}}, ` + answer("presented") + `},
    {match: {prefix: /}, ` + answer("anonymous") + `}]}]},
  http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: web
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [{filters: [%s], transport_socket: %s}]
`, port, hcm, f.transportSocket("", `, validation_context: {trusted_ca: {filename: `+f.ca+`}, trust_chain_verification: ACCEPT_UNTRUSTED}`))
		s := Start(dir, cfg)
		s.WaitLive()

		get := func(cert, key string) string {
			GinkgoHelper()
			c := &tls.Config{RootCAs: f.caPool, ServerName: "localhost"}
			if cert != "" {
				pair, err := tls.LoadX509KeyPair(cert, key)
				Expect(err).NotTo(HaveOccurred())
				// Sent whatever CAs the proxy names (Go's client
				// sends none that another CA issued otherwise).
				c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
			}
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
			r := httpDo(client, "GET", fmt.Sprintf("https://127.0.0.1:%d/", port), nil, nil)
			Expect(r.Status).To(Equal(200))
			return r.Body
		}
		Expect(get(f.clientCert, f.clientKey)).To(Equal("validated"))
		Expect(get(strangerCert, strangerKey)).To(Equal("presented"))
		Expect(get("", "")).To(Equal("anonymous"))
	})
})
