package e2e

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// xfccChain is a filter chain for the server name <mode>.example.com
// serving TLS that asks for (but does not require) a client certificate,
// whose connection manager has forward_client_cert_details mode and the
// given set_current_client_cert_details, routing to cluster echo.
func xfccChain(f *tlsFiles, mode, details string) string {
	return `{filter_chain_match: {server_names: [` + strings.ToLower(strings.ReplaceAll(mode, "_", "-")) + `.example.com]},
  transport_socket: ` + f.transportSocket("", `, validation_context: {trusted_ca: {filename: `+f.ca+`}}`) + `,
  filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
    stat_prefix: ` + strings.ToLower(mode) + `, forward_client_cert_details: ` + mode + `, set_current_client_cert_details: {` + details + `},
    route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: echo}}]}]},
    http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
}

var _ = Describe("x-forwarded-client-cert", func() {
	It("is sanitized, forwarded, appended or set with the client certificate's details as Envoy formats them", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		echo := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v, ok := r.Header["X-Forwarded-Client-Cert"]
			_, _ = fmt.Fprintf(w, "%v %s", ok, strings.Join(v, "|"))
		}), false)
		_, echoPort, err := net.SplitHostPort(echo)
		Expect(err).NotTo(HaveOccurred())
		ep, err := strconv.Atoi(echoPort)
		Expect(err).NotTo(HaveOccurred())
		port := freePort()
		all := "subject: true, cert: true, chain: true, dns: true, uri: true"
		Start(dir, tlsBootstrap(port, tlsInspector, []string{
			xfccChain(f, "SANITIZE", all),
			xfccChain(f, "FORWARD_ONLY", all),
			xfccChain(f, "APPEND_FORWARD", "uri: true"),
			xfccChain(f, "SANITIZE_SET", all),
			xfccChain(f, "ALWAYS_FORWARD_ONLY", all),
		}, tcpCluster("echo", ep)))

		clientCert, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
		Expect(err).NotTo(HaveOccurred())
		get := func(mode string, withCert bool, incoming string) string {
			GinkgoHelper()
			cfg := &tls.Config{RootCAs: f.caPool, ServerName: mode + ".example.com"}
			if withCert {
				cfg.Certificates = []tls.Certificate{clientCert}
			}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
			defer client.CloseIdleConnections()
			var h http.Header
			if incoming != "" {
				h = http.Header{"X-Forwarded-Client-Cert": {incoming}}
			}
			r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil, h)
			Expect(r.Status).To(Equal(200), r.Body)
			return r.Body
		}

		// What this hop adds, computed here from the certificates.
		sum := sha256.Sum256(f.client.Cert.Raw)
		hash := "Hash=" + hex.EncodeToString(sum[:])
		pemText := strings.NewReplacer("\n", "%0A", " ", "%20", "+", "%2B", "/", "%2F", "=", "%3D").Replace(string(f.client.CertPEM))
		full := "By=" + serverSAN + ";" + hash + `;Cert="` + pemText + `";Chain="` + pemText + `";Subject="CN=frontend,O=Outrigger tests";URI=` + clientSAN
		incoming := "By=spiffe://cluster.local/ns/edge/sa/gateway;Hash=00;URI=spiffe://cluster.local/ns/edge/sa/client"

		// SANITIZE: never forwarded.
		Expect(get("sanitize", true, incoming)).To(Equal("false "))
		// FORWARD_ONLY: the client's header on mutual TLS only.
		Expect(get("forward-only", true, incoming)).To(Equal("true " + incoming))
		Expect(get("forward-only", false, incoming)).To(Equal("false "))
		// APPEND_FORWARD: this hop's element after the client's.
		Expect(get("append-forward", true, incoming)).To(Equal("true " + incoming + ",By=" + serverSAN + ";" + hash + ";URI=" + clientSAN))
		Expect(get("append-forward", true, "")).To(Equal("true By=" + serverSAN + ";" + hash + ";URI=" + clientSAN))
		Expect(get("append-forward", false, incoming)).To(Equal("false "))
		// SANITIZE_SET: this hop's element alone, every detail.
		Expect(get("sanitize-set", true, incoming)).To(Equal("true " + full))
		Expect(get("sanitize-set", false, incoming)).To(Equal("false "))
		// ALWAYS_FORWARD_ONLY: as the client sent it, mutual TLS or not.
		Expect(get("always-forward-only", false, incoming)).To(Equal("true " + incoming))
		Expect(get("always-forward-only", true, incoming)).To(Equal("true " + incoming))
	})
})
