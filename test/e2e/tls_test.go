package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// tlsFiles are a CA, a server certificate for localhost and *.example.com,
// a client certificate with a SPIFFE URI SAN and one with another, all
// written to a spec's directory when it runs.
type tlsFiles struct {
	dir                            string
	ca, cert, key                  string
	caKey                          string // for openssl ocsp
	clientCert, clientKey          string
	otherClientCert, otherClientKy string
	client                         *tlstest.Leaf
	caPool                         *x509.CertPool
}

const (
	clientSAN = "spiffe://cluster.local/ns/shop/sa/frontend"
	serverSAN = "spiffe://cluster.local/ns/shop/sa/api"
)

func newTLSFiles(dir string) *tlsFiles {
	GinkgoHelper()
	ca, err := tlstest.NewCA("Outrigger test CA")
	Expect(err).NotTo(HaveOccurred())
	srv, err := ca.Issue(tlstest.Options{CommonName: "localhost", DNS: []string{"localhost", "a.example.com", "*.example.com"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, URIs: []string{serverSAN}})
	Expect(err).NotTo(HaveOccurred())
	cli, err := ca.Issue(tlstest.Options{CommonName: "frontend", URIs: []string{clientSAN}, Client: true})
	Expect(err).NotTo(HaveOccurred())
	other, err := ca.Issue(tlstest.Options{CommonName: "intruder", URIs: []string{"spiffe://cluster.local/ns/other/sa/intruder"}, Client: true})
	Expect(err).NotTo(HaveOccurred())
	f := &tlsFiles{dir: dir, client: cli, caPool: x509.NewCertPool()}
	f.caPool.AddCert(ca.Cert)
	w := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		Expect(os.WriteFile(p, b, 0o600)).To(Succeed())
		return p
	}
	f.ca, f.cert, f.key = w("ca.pem", ca.PEM), w("server.pem", srv.CertPEM), w("server-key.pem", srv.KeyPEM)
	caKey, err := ca.KeyPEM()
	Expect(err).NotTo(HaveOccurred())
	f.caKey = w("ca-key.pem", caKey)
	f.clientCert, f.clientKey = w("client.pem", cli.CertPEM), w("client-key.pem", cli.KeyPEM)
	f.otherClientCert, f.otherClientKy = w("other.pem", other.CertPEM), w("other-key.pem", other.KeyPEM)
	return f
}

// transportSocket is a filter chain's TLS transport socket (YAML flow)
// serving the server certificate, with extra DownstreamTlsContext and
// CommonTlsContext fields.
func (f *tlsFiles) transportSocket(downstream, common string) string {
	return fmt.Sprintf(`{name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext, %s
  common_tls_context: {tls_certificates: [{certificate_chain: {filename: %s}, private_key: {filename: %s}}] %s}}}`, downstream, f.cert, f.key, common)
}

// directHCM is an http_connection_manager answering every request with
// body, logging with format to stdout.
func directHCM(body, format string) string {
	log := ""
	if format != "" {
		log = `, access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, log_format: {text_format_source: {inline_string: "` + format + `\n"}}}}]`
	}
	return `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: ` + strings.ReplaceAll(body, "-", "_") + `, codec_type: AUTO` + log + `,
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: ` + body + `}}}]}]},
  http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
}

// tlsBootstrap is one listener on port with the given listener filters
// and filter chains (YAML flow), and clusters.
func tlsBootstrap(port int, listenerFilters string, chains []string, clusters ...string) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: tls
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    listener_filters: [%s]
    filter_chains: [%s]
`, strings.Join(clusters, ", "), port, listenerFilters, strings.Join(chains, ",\n"))
}

const tlsInspector = `{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}`

// needTool skips a spec when a client it drives is not installed
// (hack/tls-tools.sh installs them for make test-e2e).
func needTool(name string) {
	GinkgoHelper()
	if _, err := exec.LookPath(name); err != nil {
		Skip(name + " is not installed (hack/tls-tools.sh installs it)")
	}
}

// curlTLS runs curl with args and returns its output and exit code.
func curlTLS(args ...string) (string, int) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "curl", append([]string{"-sS", "--max-time", "10"}, args...)...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	Expect(err).NotTo(HaveOccurred())
	return string(out), 0
}

// resolve is curl's --resolve for name on the loopback port.
func resolve(name string, port int) string {
	return fmt.Sprintf("%s:%d:127.0.0.1", name, port)
}

var _ = Describe("Downstream TLS", func() {
	It("serves HTTPS to curl and Go, picks HTTP/2 or HTTP/1.1 by ALPN, counts the handshakes and logs the TLS operators", func() {
		needTool("curl")
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		chain := `{filters: [` + directHCM("hello-tls", "TLSLOG %PROTOCOL% %DOWNSTREAM_TLS_VERSION% %DOWNSTREAM_TLS_CIPHER% %REQUESTED_SERVER_NAME% %DOWNSTREAM_PEER_SUBJECT% %REQ(X-FORWARDED-PROTO)%") + `],
  transport_socket: ` + f.transportSocket("", `, alpn_protocols: [h2, http/1.1]`) + `}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}), "--file-flush-interval-msec", "50")
		url := fmt.Sprintf("https://a.example.com:%d/", port)

		out, code := curlTLS("--cacert", f.ca, "--resolve", resolve("a.example.com", port), "--http2", "-w", " %{http_version}", url)
		Expect(code).To(BeZero(), out)
		Expect(out).To(Equal("hello-tls 2"))
		out, code = curlTLS("--cacert", f.ca, "--resolve", resolve("a.example.com", port), "--http1.1", "-w", " %{http_version}", url)
		Expect(code).To(BeZero(), out)
		Expect(out).To(Equal("hello-tls 1.1"))
		Eventually(s.Stdout).Should(ContainSubstring("TLSLOG HTTP/2 TLSv1.3 "))
		Eventually(s.Stdout).Should(MatchRegexp(`TLSLOG HTTP/1.1 TLSv1.3 TLS_[A-Z0-9_]+ a.example.com - https\n`))

		// Go's client, held to TLS 1.2 and one suite: the stats name them
		// as Envoy does.
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{
			RootCAs: f.caPool, ServerName: "localhost", MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, CurvePreferences: []tls.CurveID{tls.CurveP256},
		})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		resp, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(resp)).To(HavePrefix("HTTP/1.1 200"))
		Eventually(s.Stdout).Should(ContainSubstring("TLSLOG HTTP/1.1 TLSv1.2 ECDHE-ECDSA-AES128-GCM-SHA256 localhost - https\n"))

		ssl := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)
		Expect(statValue(s, ssl+"handshake")).To(Equal("3"))
		Expect(statValue(s, ssl+"no_certificate")).To(Equal("3"))
		Expect(statValue(s, ssl+"versions.TLSv1.3")).To(Equal("2"))
		Expect(statValue(s, ssl+"versions.TLSv1.2")).To(Equal("1"))
		Expect(statValue(s, ssl+"ciphers.ECDHE-ECDSA-AES128-GCM-SHA256")).To(Equal("1"))
		Expect(statValue(s, ssl+"curves.P-256")).To(Equal("1"))
		Expect(statValue(s, ssl+"connection_error")).To(Equal("0"))
		Expect(statValue(s, "http.hello_tls.downstream_cx_http2_total")).To(Equal("1"))
		Expect(statValue(s, "http.hello_tls.downstream_cx_http1_total")).To(Equal("2"))

		// Prometheus sees the cipher as a tag; a version has a dot, which no
		// tag value may, so it stays in the name, as in Envoy.
		var prom []string
		promText := s.Get("/stats/prometheus").Body
		Expect(promText).To(ContainSubstring("# HELP proxy_listener_ssl_ciphers TLS handshakes by negotiated cipher suite."))
		for l := range strings.SplitSeq(promText, "\n") {
			if strings.HasPrefix(l, "proxy_listener_ssl_") {
				prom = append(prom, l)
			}
		}
		Expect(prom).To(ContainElement(`proxy_listener_ssl_versions_TLSv1_2{proxy_listener_address="127.0.0.1_` + strconv.Itoa(port) + `"} 1`))
		Expect(prom).To(ContainElement(`proxy_listener_ssl_ciphers{proxy_ssl_cipher="ECDHE-ECDSA-AES128-GCM-SHA256",proxy_listener_address="127.0.0.1_` + strconv.Itoa(port) + `"} 1`))

		// A plaintext client on the TLS chain fails its handshake and is
		// counted; the listener goes on serving.
		pc := dialTCP(port)
		_, _ = pc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		expectClosedOrAlert(pc)
		Eventually(func() string { return statValue(s, ssl+"connection_error") }).Should(Equal("1"))
		out, code = curlTLS("--cacert", f.ca, "--resolve", resolve("a.example.com", port), url)
		Expect(code).To(BeZero(), out)
	})

	It("requires and verifies client certificates: mTLS accepted, no certificate and a SAN mismatch refused with an alert and counted", func() {
		needTool("curl")
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		chain := `{filters: [` + directHCM("mtls", "MTLS %DOWNSTREAM_PEER_URI_SAN% | %DOWNSTREAM_PEER_SUBJECT% | %DOWNSTREAM_PEER_FINGERPRINT_256% | %DOWNSTREAM_PEER_SERIAL% | %DOWNSTREAM_LOCAL_URI_SAN% | %DOWNSTREAM_LOCAL_SUBJECT%") + `],
  transport_socket: ` + f.transportSocket("require_client_certificate: true,",
			`, validation_context: {trusted_ca: {filename: `+f.ca+`}, match_typed_subject_alt_names: [{san_type: URI, matcher: {exact: "`+clientSAN+`"}}]}`) + `}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}), "--file-flush-interval-msec", "50")
		url := fmt.Sprintf("https://localhost:%d/", port)

		out, code := curlTLS("--cacert", f.ca, "--cert", f.clientCert, "--key", f.clientKey, url)
		Expect(code).To(BeZero(), out)
		Expect(out).To(Equal("mtls"))
		sum := sha256.Sum256(f.client.Cert.Raw)
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("MTLS %s | CN=frontend,O=Outrigger tests | %s | %s | %s | CN=localhost,O=Outrigger tests\n",
			clientSAN, hex.EncodeToString(sum[:]), f.client.Cert.SerialNumber.Text(16), serverSAN)))

		_, code = curlTLS("--cacert", f.ca, url)
		Expect(code).NotTo(BeZero(), "served without a client certificate")
		out, code = curlTLS("--cacert", f.ca, "--cert", f.otherClientCert, "--key", f.otherClientKy, url)
		Expect(code).NotTo(BeZero(), "served a certificate with another SAN: %s", out)

		// Go's client sees the alert.
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
		if err == nil {
			_, err = c.Read(make([]byte, 1))
		}
		Expect(err).To(MatchError(ContainSubstring("certificate required")))

		ssl := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)
		Eventually(func() string { return statValue(s, ssl+"fail_verify_no_cert") }).Should(Equal("2"))
		Eventually(func() string { return statValue(s, ssl+"fail_verify_san") }).Should(Equal("1"))
		Eventually(func() string { return statValue(s, ssl+"connection_error") }).Should(Equal("3"))
		Expect(statValue(s, ssl+"handshake")).To(Equal("1"))
		out, code = curlTLS("--cacert", f.ca, "--cert", f.clientCert, "--key", f.clientKey, url)
		Expect(code).To(BeZero(), out)
	})

	It("routes by SNI through the tls_inspector: exact name, wildcard, and a plaintext chain on the same listener", func() {
		needTool("curl")
		needTool("openssl")
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		ts := f.transportSocket("", `, alpn_protocols: [h2, http/1.1]`)
		chains := []string{
			`{filter_chain_match: {server_names: [a.example.com]}, filters: [` + directHCM("chain-exact", "") + `], transport_socket: ` + ts + `}`,
			`{filter_chain_match: {server_names: ["*.example.com"]}, filters: [` + directHCM("chain-wildcard", "") + `], transport_socket: ` + ts + `}`,
			`{filter_chain_match: {transport_protocol: tls}, filters: [` + directHCM("chain-tls", "") + `], transport_socket: ` + ts + `}`,
			`{filter_chain_match: {transport_protocol: raw_buffer}, filters: [` + directHCM("chain-plain", "") + `]}`,
		}
		s := Start(dir, tlsBootstrap(port, tlsInspector, chains))
		get := func(name string) string {
			GinkgoHelper()
			out, code := curlTLS("--cacert", f.ca, "--resolve", resolve(name, port), fmt.Sprintf("https://%s:%d/", name, port))
			Expect(code).To(BeZero(), out)
			return out
		}
		Expect(get("a.example.com")).To(Equal("chain-exact"))
		Expect(get("b.example.com")).To(Equal("chain-wildcard"))
		Expect(get("localhost")).To(Equal("chain-tls"))
		out, code := curlTLS(fmt.Sprintf("http://127.0.0.1:%d/", port))
		Expect(code).To(BeZero(), out)
		Expect(out).To(Equal("chain-plain"))

		// openssl s_client: SNI, ALPN and a verified chain.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "openssl", "s_client", "-connect", fmt.Sprintf("127.0.0.1:%d", port),
			"-servername", "a.example.com", "-alpn", "h2", "-CAfile", f.ca, "-verify_return_error")
		cmd.Stdin = strings.NewReader("")
		b, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(b))
		Expect(string(b)).To(ContainSubstring("ALPN protocol: h2"))
		Expect(string(b)).To(ContainSubstring("Verify return code: 0 (ok)"))

		Expect(statValue(s, "tls_inspector.tls_found")).To(Equal("4"))
		Expect(statValue(s, "tls_inspector.tls_not_found")).To(Equal("1"))
		Expect(statValue(s, "tls_inspector.sni_found")).To(Equal("4"))
		Expect(statValue(s, "tls_inspector.alpn_found")).To(Equal("4"))
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.no_filter_chain_match", port))).To(Equal("0"))
	})

	It("ends handshakes at transport_socket_connect_timeout and keeps keys out of /config_dump", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		chain := `{filters: [` + directHCM("slow", "") + `], transport_socket_connect_timeout: 0.3s, transport_socket: ` +
			strings.Replace(f.transportSocket("", ""), "private_key: {filename: "+f.key+"}", "private_key: {inline_string: "+strconv.Quote(readFile(f.key))+"}", 1) + `}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		c := dialTCP(port) // says nothing
		expectClosed(c)
		// The socket closes as the handshake is cut, just before it is counted.
		Eventually(func() string {
			return statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.downstream_cx_transport_socket_connect_timeout", port))
		}).Should(Equal("1"))
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.connection_error", port))).To(Equal("0"))

		dump := s.Get("/config_dump").Body
		Expect(dump).To(ContainSubstring(`"private_key": {`))
		Expect(dump).To(ContainSubstring(`"inline_string": "[redacted]"`))
		Expect(dump).NotTo(ContainSubstring("PRIVATE KEY"))
	})

	It("removes a client's x-forwarded-client-cert (forward_client_cert_details: SANITIZE, the default)", func() {
		up := headerEchoUpstream()
		port := freePort()
		Start(newDir(), proxySpec{Port: port, HCM: "{forward_client_cert_details: SANITIZE}", Clusters: []proxyCluster{{Name: "up", Port: up}}}.YAML())
		req, err := http.NewRequest("GET", listenerURL(port, "/"), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X-Forwarded-Client-Cert", "By=spiffe://forged;URI=spiffe://admin")
		req.Header.Set("X-Kept", "yes")
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var got map[string]string
		Expect(json.NewDecoder(resp.Body).Decode(&got)).To(Succeed())
		Expect(got).To(HaveKeyWithValue("X-Kept", "yes"))
		Expect(got).NotTo(HaveKey("X-Forwarded-Client-Cert"))
	})

	It("carries a tcp_proxy connection over TLS", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		up := startTCPServer(echo)
		port := freePort()
		chain := `{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tls_tcp, cluster: echo,
  access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, log_format: {text_format_source: {inline_string: "TCPTLS %DOWNSTREAM_TLS_VERSION% %REQUESTED_SERVER_NAME% %BYTES_RECEIVED%\n"}}}}]}}],
  transport_socket: ` + f.transportSocket("", "") + `}`
		s := Start(dir, tlsBootstrap(port, tlsInspector, []string{chain}, tcpCluster("echo", up)), "--file-flush-interval-msec", "50")
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "a.example.com"})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
		_, err = c.Write([]byte("ping over tls\n"))
		Expect(err).NotTo(HaveOccurred())
		line, err := bufio.NewReader(c).ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		Expect(line).To(Equal("ping over tls\n"))
		Expect(c.Close()).To(Succeed())
		Eventually(s.Stdout).Should(ContainSubstring("TCPTLS TLSv1.3 a.example.com 14\n"))
	})

	It("refuses bad TLS configuration in --mode validate, naming the field and the file", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		chain := func(ts string) []string {
			return []string{`{filters: [` + directHCM("bad", "") + `], transport_socket: ` + ts + `}`}
		}
		missing := filepath.Join(dir, "missing.pem")
		cases := map[string]struct{ ts, want string }{
			"missing file": {
				strings.Replace(f.transportSocket("", ""), f.cert, missing, 1),
				`static_resources.listeners[0].filter_chains[0].transport_socket.typed_config.common_tls_context.tls_certificates[0].certificate_chain.filename: cannot read "` + missing + `": no such file or directory`,
			},
			"mismatched key": {
				strings.Replace(f.transportSocket("", ""), f.key, f.clientKey, 1),
				`static_resources.listeners[0].filter_chains[0].transport_socket.typed_config.common_tls_context.tls_certificates[0].private_key: the key in ` + f.clientKey + ` does not match the certificate in ` + f.cert,
			},
			"bad cipher": {
				f.transportSocket("", `, tls_params: {cipher_suites: [ECDHE-RSA-AES128-GCM-SHA256, RC4-MD5]}`),
				`static_resources.listeners[0].filter_chains[0].transport_socket.typed_config.common_tls_context.tls_params.cipher_suites[1]: unknown or unsupported cipher suite "RC4-MD5"`,
			},
		}
		for name, tc := range cases {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			Expect(os.WriteFile(path, []byte(tlsBootstrap(freePort(), "", chain(tc.ts))), 0o600)).To(Succeed())
			r := Run("--mode", "validate", "-c", path)
			Expect(r.ExitCode).To(Equal(1), name)
			Expect(r.Stderr).To(ContainSubstring(tc.want), name)
		}
	})
})

// expectClosedOrAlert checks that the proxy ends a connection whose
// client is not speaking TLS: it may send an alert first.
func expectClosedOrAlert(c net.Conn) {
	GinkgoHelper()
	Expect(c.SetReadDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	_, err := io.ReadAll(c)
	if err != nil {
		Expect(err.Error()).NotTo(ContainSubstring("timeout"), "the connection stayed open")
	}
}
