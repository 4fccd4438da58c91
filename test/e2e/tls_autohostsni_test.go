package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// startNamedTLSUpstream serves HTTPS with a certificate of ca for the DNS
// name only, answering "<name> sni=<server name sent>" until the spec
// ends. It returns the port.
func startNamedTLSUpstream(ca *tlstest.CA, name string) int {
	GinkgoHelper()
	leaf, err := ca.Issue(tlstest.Options{CommonName: name, DNS: []string{name}})
	Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "%s sni=%s", name, r.TLS.ServerName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	// The handshakes the specs fail on purpose are not news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	DeferCleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

var _ = Describe("Upstream TLS auto_host_sni and auto_sni_san_validation", func() {
	It("sends each host's hostname as SNI and checks the certificate's DNS SANs against it", func() {
		dir := newDir()
		Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
		ca, err := tlstest.NewCA("auto host sni CA")
		Expect(err).NotTo(HaveOccurred())
		caFile := filepath.Join(dir, "ca.pem")
		Expect(os.WriteFile(caFile, ca.PEM, 0o600)).To(Succeed())
		// Two upstreams whose certificates cover only their own name.
		a := startNamedTLSUpstream(ca, "a.example.com")
		b := startNamedTLSUpstream(ca, "b.example.com")

		tlsCtx := func(fields string) string {
			return upstreamTLS(`, sni: fixed.example.com, ` + fields + ` common_tls_context: {validation_context: {trusted_ca: {filename: ` + caFile + `}}}`)
		}
		ep := func(port int, hostname string) string {
			h := ""
			if hostname != "" {
				h = ", hostname: " + hostname
			}
			return fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}%s}}", port, h)
		}
		cluster := func(name, typ, ts string, eps ...string) string {
			return fmt.Sprintf("{name: %s, type: %s, connect_timeout: 2s, dns_lookup_family: V4_ONLY, transport_socket: %s, load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [%s]}]}}",
				name, typ, ts, name, strings.Join(eps, ", "))
		}
		auto := tlsCtx("auto_host_sni: true, auto_sni_san_validation: true,")
		port := freePort()
		s := Start(dir, tlsBootstrap(port, "", []string{`{filters: [` + routingHCM("HOSTSNI %REQ(:PATH)% %RESPONSE_CODE% %UPSTREAM_TRANSPORT_FAILURE_REASON%", "both", "mismatch", "nohostname", "dns", "plain") + `]}`},
			// Two hosts needing different certificates, in one cluster.
			cluster("both", "STATIC", auto, ep(a, "a.example.com"), ep(b, "b.example.com")),
			// A hostname the host's certificate does not cover.
			cluster("mismatch", "STATIC", auto, ep(a, "b.example.com")),
			// No hostname: the configured sni, which a's certificate
			// does not cover either.
			cluster("nohostname", "STATIC", auto, ep(a, "")),
			// A DNS cluster's hosts are named by the name resolved.
			fmt.Sprintf("{name: dns, type: STRICT_DNS, connect_timeout: 2s, dns_lookup_family: V4_ONLY, transport_socket: %s, load_assignment: {cluster_name: dns, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: localhost, port_value: %d}}}}]}]}}",
				tlsCtx("auto_host_sni: true,"), a),
			// Without auto_host_sni the hostname is not sent.
			cluster("plain", "STATIC", tlsCtx(""), ep(a, "a.example.com")),
		), "--file-flush-interval-msec", "50")
		base := fmt.Sprintf("http://127.0.0.1:%d/", port)
		client := &http.Client{Timeout: 10 * time.Second}

		seen := map[string]bool{}
		for range 4 {
			code, body := fetchAs(client, base+"both", "front.example.com")
			Expect(code).To(Equal(200), body)
			Expect(body).To(BeElementOf("a.example.com sni=a.example.com", "b.example.com sni=b.example.com"))
			seen[body] = true
		}
		Expect(seen).To(HaveLen(2))
		Expect(statValue(s, "cluster.both.ssl.fail_verify_san")).To(Equal("0"))

		for i, path := range []string{"mismatch", "nohostname"} {
			code, body := fetchAs(client, base+path, "front.example.com")
			Expect(code).To(Equal(503), body)
			Expect(body).To(ContainSubstring("CERTIFICATE_VERIFY_FAILED"))
			Expect(statValue(s, "cluster."+path+".ssl.fail_verify_san")).To(Equal("1"), "request %d", i)
			Eventually(s.Stdout).Should(ContainSubstring("HOSTSNI /" + path + " 503 TLS_error:|268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:TLS_error_end\n"))
		}

		code, body := fetchAs(client, base+"dns", "front.example.com")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("a.example.com sni=localhost"))

		code, body = fetchAs(client, base+"plain", "front.example.com")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("a.example.com sni=fixed.example.com"))
	})

	It("refuses auto_sni_san_validation without a trusted CA, as Envoy does", func() {
		dir := newDir()
		Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
		cluster := tlsCluster("up", 1, upstreamTLS(`, sni: x.example.com, auto_sni_san_validation: true`), "")
		r, _ := validate("autosnisan.yaml", tlsBootstrap(freePort(), "", []string{`{filters: [` + routingHCM("%RESPONSE_CODE%", "up") + `]}`}, cluster))
		Expect(r.ExitCode).To(Equal(1), r.Stdout+r.Stderr)
		Expect(r.Stdout + r.Stderr).To(ContainSubstring("auto_sni_san_validation"))
		Expect(r.Stdout + r.Stderr).To(ContainSubstring("'auto_sni_san_validation' was configured without a validation context"))
	})
})
