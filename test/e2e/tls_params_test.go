package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// sClientTry runs openssl s_client against the loopback port with args,
// sending one HTTP/1.0 request, and returns what it printed and whether
// it exited cleanly (a refused handshake does not).
func sClientTry(port int, args ...string) (string, bool) {
	GinkgoHelper()
	all := append([]string{"s_client", "-connect", fmt.Sprintf("127.0.0.1:%d", port), "-ign_eof"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openssl", all...)
	cmd.Stdin = strings.NewReader("GET / HTTP/1.0\r\n\r\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		_, isExit := err.(*exec.ExitError)
		Expect(isExit).To(BeTrue(), "openssl %v: %v", all, err)
	}
	return string(out), err == nil
}

// startTLSParams starts a sidecar whose listener answers body over TLS
// with the server certificate (ECDSA P-256) and the given
// DownstreamTlsContext and CommonTlsContext fields.
func startTLSParams(body, downstream, common string) (*Sidecar, int) {
	GinkgoHelper()
	dir := newDir()
	f := newTLSFiles(dir)
	port := freePort()
	chain := `{filters: [` + directHCM(body, "") + `], transport_socket: ` + f.transportSocket(downstream, common) + `}`
	return Start(dir, tlsBootstrap(port, "", []string{chain})), port
}

var _ = Describe("Downstream TLS parameters", func() {
	BeforeEach(func() { needTool("openssl") })

	It("require_sni refuses hellos without a server name a certificate covers, counting them", func() {
		s, port := startTLSParams("sni", "require_sni: true,", "")
		ssl := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)
		sess := filepath.Join(newDir(), "session.pem")
		out, ok := sClientTry(port, "-servername", "localhost", "-sess_out", sess)
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("New, TLSv1.3"))
		out, ok = sClientTry(port, "-servername", "localhost", "-sess_in", sess)
		Expect(ok).To(BeTrue(), out)
		Expect(resumedBy(out)).To(BeTrue(), out)
		out, ok = sClientTry(port, "-noservername")
		Expect(ok).To(BeFalse(), out)
		out, ok = sClientTry(port, "-servername", "other.example.org")
		Expect(ok).To(BeFalse(), out)
		// Resuming the session does not skip the check.
		out, ok = sClientTry(port, "-noservername", "-sess_in", sess)
		Expect(ok).To(BeFalse(), out)
		Eventually(func() string { return statValue(s, ssl+"fail_no_sni_match") }).Should(Equal("3"))
		Expect(statValue(s, ssl+"connection_error")).To(Equal("3"))
		Expect(statValue(s, ssl+"handshake")).To(Equal("2"))
		Expect(s.Get("/stats?format=prometheus&filter=fail_no_sni_match").Body).To(ContainSubstring("# HELP proxy_listener_ssl_fail_no_sni_match TLS handshakes refused by require_sni"))
	})

	It("prefer_client_ciphers gives a TLS 1.2 client its first suite; without it the server's choice stands", func() {
		// openssl sends its suites in the order given; Go's server alone
		// would take AES-128-GCM, first in its own order.
		order := "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"
		s, port := startTLSParams("ciphers", "prefer_client_ciphers: true,", "")
		out, ok := sClientTry(port, "-servername", "localhost", "-tls1_2", "-cipher", order)
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("Cipher is ECDHE-ECDSA-AES256-GCM-SHA384"))
		Eventually(func() string {
			return statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.ciphers.ECDHE-ECDSA-AES256-GCM-SHA384", port))
		}).Should(Equal("1"))

		_, port = startTLSParams("ciphers", "", "")
		out, ok = sClientTry(port, "-servername", "localhost", "-tls1_2", "-cipher", order)
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"))
	})

	It("signature_algorithms limits the listener's signatures", func() {
		_, port := startTLSParams("sigalgs", "", ", tls_params: {signature_algorithms: [ecdsa_secp384r1_sha384]}")
		// TLS 1.2: the client offers SHA-256 first; the listener signs
		// with SHA-384, the only one it may use.
		out, ok := sClientTry(port, "-servername", "localhost", "-tls1_2", "-sigalgs", "ECDSA+SHA256:ECDSA+SHA384")
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("Peer signing digest: SHA384"))
		// A client that takes SHA-256 alone finds nothing in common.
		out, ok = sClientTry(port, "-servername", "localhost", "-tls1_2", "-sigalgs", "ECDSA+SHA256")
		Expect(ok).To(BeFalse(), out)
		// TLS 1.3 binds P-256 keys to SHA-256: nothing in common either.
		out, ok = sClientTry(port, "-servername", "localhost", "-tls1_3")
		Expect(ok).To(BeFalse(), out)
	})

	It("compliance policy FIPS_202205 allows TLS 1.2-1.3, AES-GCM and P-256 or P-384 only", func() {
		s, port := startTLSParams("fips", "", ", tls_params: {tls_maximum_protocol_version: TLSv1_2, compliance_policies: [FIPS_202205]}")
		ssl := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)
		// The policy replaces the configured maximum.
		out, ok := sClientTry(port, "-servername", "localhost", "-ciphersuites", "TLS_AES_256_GCM_SHA384", "-groups", "P-384")
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384"))
		for _, args := range [][]string{
			{"-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"},
			{"-groups", "X25519"},
			{"-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"},
			{"-tls1_1", "-cipher", "ECDHE-ECDSA-AES128-SHA@SECLEVEL=0"},
		} {
			out, ok = sClientTry(port, append([]string{"-servername", "localhost"}, args...)...)
			Expect(ok).To(BeFalse(), "%v: %s", args, out)
		}
		Eventually(func() string { return statValue(s, ssl+"handshake") }).Should(Equal("1"))
		Expect(statValue(s, ssl+"curves.P-384")).To(Equal("1"))
	})
})

var _ = Describe("Downstream TLS certificate tls_params", func() {
	It("gives the handshakes that pick a certificate its own parameters", func() {
		needTool("openssl")
		dir := newDir()
		ca, err := tlstest.NewCA("Outrigger test CA")
		Expect(err).NotTo(HaveOccurred())
		cert := func(name string, rsa bool, params string) string {
			l, err := ca.Issue(tlstest.Options{CommonName: name, DNS: []string{name}, RSA: rsa})
			Expect(err).NotTo(HaveOccurred())
			c, k := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
			Expect(os.WriteFile(c, l.CertPEM, 0o600)).To(Succeed())
			Expect(os.WriteFile(k, l.KeyPEM, 0o600)).To(Succeed())
			return fmt.Sprintf("{certificate_chain: {filename: %s}, private_key: {filename: %s}%s}", c, k, params)
		}
		port := freePort()
		chain := `{filters: [` + directHCM("certparams", "") + `], transport_socket: {name: envoy.transport_sockets.tls, typed_config: {
  "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
  common_tls_context: {tls_certificates: [` +
			cert("ecdsa.example.com", false, "") + ", " +
			cert("rsa.example.com", true, ", tls_params: {tls_maximum_protocol_version: TLSv1_2, cipher_suites: [ECDHE-RSA-AES256-GCM-SHA384]}") + `]}}}}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		out, ok := sClientTry(port, "-servername", "rsa.example.com")
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("TLSv1.2, Cipher is ECDHE-RSA-AES256-GCM-SHA384"))
		out, ok = sClientTry(port, "-servername", "ecdsa.example.com")
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("New, TLSv1.3"))
		// The certificate's suite alone: no other certificate is tried.
		out, ok = sClientTry(port, "-servername", "rsa.example.com", "-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256")
		Expect(ok).To(BeFalse(), out)
		Eventually(func() string { return statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.handshake", port)) }).Should(Equal("2"))
	})
})

var _ = Describe("Upstream TLS system_root_certs", func() {
	It("verifies the upstream against the system's roots where trusted_ca is absent", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		Expect(os.MkdirAll(filepath.Join(dir, "other"), 0o700)).To(Succeed())
		other := newTLSFiles(filepath.Join(dir, "other"))
		trusted, untrusted := startTLSUpstream(f, false), startTLSUpstream(other, false)
		system := upstreamTLS(`, sni: localhost, common_tls_context: {validation_context: {system_root_certs: {}}}`)
		port := freePort()
		chain := `{filters: [` + routingHCM("UPLOG %REQ(:PATH)% %RESPONSE_CODE%", "trusted", "untrusted") + `]}`
		// The sidecar's system roots are the spec's CA: Go reads
		// SSL_CERT_FILE on Linux.
		s := StartEnv(dir, tlsBootstrap(port, "", []string{chain},
			tlsCluster("trusted", trusted, system, ""),
			tlsCluster("untrusted", untrusted, system, ""),
		), []string{"SSL_CERT_FILE=" + f.ca, "SSL_CERT_DIR=" + filepath.Join(dir, "nocerts")})
		base := fmt.Sprintf("http://127.0.0.1:%d/", port)
		code, body := fetch(base + "trusted")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("sni=localhost"))
		code, body = fetch(base + "untrusted")
		Expect(code).To(Equal(503), body)
		Expect(statValue(s, "cluster.untrusted.ssl.fail_verify_error")).To(Equal("1"))
		Expect(statValue(s, "cluster.trusted.ssl.handshake")).To(Equal("1"))
	})
})
