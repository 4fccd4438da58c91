package e2e

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// ocspResponse has openssl's OCSP responder answer, signed by f's CA, that
// the certificate in certFile is good, and returns the DER file.
func ocspResponse(f *tlsFiles, certFile, name string) string {
	GinkgoHelper()
	b, err := os.ReadFile(certFile)
	Expect(err).NotTo(HaveOccurred())
	block, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	index := filepath.Join(f.dir, name+".index")
	line := fmt.Sprintf("V\t%s\t\t%X\tunknown\t/CN=%s\n", cert.NotAfter.UTC().Format("060102150405Z"), cert.SerialNumber, cert.Subject.CommonName)
	Expect(os.WriteFile(index, []byte(line), 0o600)).To(Succeed())
	out := filepath.Join(f.dir, name+".der")
	runOpenSSL("", "ocsp", "-index", index, "-rsigner", f.ca, "-rkey", f.caKey, "-CA", f.ca, "-issuer", f.ca,
		"-cert", certFile, "-respout", out, "-ndays", "1")
	return out
}

var _ = Describe("OCSP stapling", func() {
	It("staples the configured response for clients that ask, by ocsp_staple_policy, and refuses bad responses", func() {
		needTool("openssl")
		dir := newDir()
		f := newTLSFiles(dir)
		good := ocspResponse(f, f.cert, "server")
		other := ocspResponse(f, f.clientCert, "client")
		chain := func(name, policy, staple string) string {
			cert := `{certificate_chain: {filename: ` + f.cert + `}, private_key: {filename: ` + f.key + `}` + staple + `}`
			return `{filter_chain_match: {server_names: [` + name + `.example.com]}, transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext` +
				policy + `, common_tls_context: {tls_certificates: [` + cert + `]}}}, filters: [` +
				strings.Replace(directHCM(name, ""), "codec_type: AUTO", "codec_type: AUTO, delayed_close_timeout: 0s", 1) + `]}`
		}
		port := freePort()
		s := Start(dir, tlsBootstrap(port, tlsInspector, []string{
			chain("stapled", ", ocsp_staple_policy: MUST_STAPLE", `, ocsp_staple: {filename: `+good+`}`),
			chain("lenient", "", ""),
		}))
		out := sClient(port, "stapled.example.com", f.ca, "", "", "-status")
		Expect(out).To(ContainSubstring("OCSP Response Status: successful (0x0)"))
		Expect(out).To(ContainSubstring("Cert Status: good"))
		// The response for the served certificate, the one configured
		// (openssl prints the serial's bytes: an even number of digits).
		b, err := os.ReadFile(f.cert)
		Expect(err).NotTo(HaveOccurred())
		block, _ := pem.Decode(b)
		served, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(fmt.Sprintf("Serial Number: %X", served.SerialNumber.Bytes())))
		out = sClient(port, "lenient.example.com", f.ca, "", "", "-status")
		Expect(out).To(ContainSubstring("OCSP response: no response sent"))
		// A client that does not ask gets none, and is not counted.
		out = sClient(port, "stapled.example.com", f.ca, "", "")
		Expect(out).NotTo(ContainSubstring("OCSP"))
		prefix := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)
		Expect(statValue(s, prefix+"ocsp_staple_requests")).To(Equal("2"))
		Expect(statValue(s, prefix+"ocsp_staple_responses")).To(Equal("1"))
		Expect(statValue(s, prefix+"ocsp_staple_omitted")).To(Equal("1"))
		Expect(statValue(s, prefix+"ocsp_staple_failed")).To(Equal("0"))
		// /certs shows the response's validity.
		Expect(s.Get("/certs").Body).To(MatchRegexp(`"ocsp_details": \{\s+"valid_from": "[0-9T:.-]+Z",\s+"expiration": "[0-9T:.-]+Z"\s+\}`))
		// The response is good for a day (openssl ocsp -ndays 1).
		Eventually(func() int {
			n, _ := strconv.Atoi(statValue(s, "server.seconds_until_first_ocsp_response_expiring"))
			return n
		}, 15*time.Second).Should(And(BeNumerically(">", 86400-600), BeNumerically("<=", 86400)))

		for name, c := range map[string]struct{ chain, want string }{
			"mismatch": {chain("x", "", `, ocsp_staple: {filename: `+other+`}`), "ocsp_staple: " + other + ": OCSP response does not match its TLS certificate"},
			"missing":  {chain("x", ", ocsp_staple_policy: MUST_STAPLE", ""), "ocsp_staple: Required OCSP response is missing from TLS context"},
			"garbage":  {chain("x", "", `, ocsp_staple: {inline_bytes: `+"Z2FyYmFnZQ=="+`}`), "ocsp_staple: inline: malformed OCSP response"},
		} {
			r, _ := validate(name+".yaml", tlsBootstrap(freePort(), tlsInspector, []string{c.chain}))
			Expect(r.ExitCode).To(Equal(1), name)
			Expect(r.Stdout+r.Stderr).To(ContainSubstring("tls_certificates[0]."+c.want), name)
		}
	})
})
