package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// spiffeValidation is a validation_context (YAML flow) of Envoy's SPIFFE
// validator with trust domains, name to bundle file.
func spiffeValidation(domains ...[2]string) string {
	var tds []string
	for _, d := range domains {
		tds = append(tds, fmt.Sprintf("{name: %s, trust_bundle: {filename: %s}}", d[0], d[1]))
	}
	return `validation_context: {custom_validator_config: {name: envoy.tls.cert_validator.spiffe, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig,
  trust_domains: [` + strings.Join(tds, ", ") + `]}}}`
}

var _ = Describe("TLS SPIFFE certificate validator", func() {
	It("accepts listener clients (curl, openssl) whose SPIFFE ID's trust domain bundle verifies them; refuses another domain's CA minting the ID and clients without a certificate, counting them", func() {
		needTool("curl")
		needTool("openssl")
		dir := newDir()
		f := newTLSFiles(dir) // trust domain cluster.local
		Expect(os.MkdirAll(filepath.Join(dir, "other"), 0o700)).To(Succeed())
		intruder := newTLSFiles(filepath.Join(dir, "other")) // another CA, same cluster.local IDs
		// A second trust domain with its own CA and workload.
		ca, err := tlstest.NewCA("other.example CA")
		Expect(err).NotTo(HaveOccurred())
		leaf, err := ca.Issue(tlstest.Options{CommonName: "worker", URIs: []string{"spiffe://other.example/ns/jobs/sa/worker"}, Client: true})
		Expect(err).NotTo(HaveOccurred())
		otherCA, otherCert, otherKey := filepath.Join(dir, "other-example-ca.pem"), filepath.Join(dir, "worker.pem"), filepath.Join(dir, "worker-key.pem")
		writeFile(otherCA, string(ca.PEM))
		writeFile(otherCert, string(leaf.CertPEM))
		writeFile(otherKey, string(leaf.KeyPEM))

		port := freePort()
		chain := `{filters: [` + directHCM("svid", "") + `],
  transport_socket: ` + f.transportSocket("", ", "+spiffeValidation([2]string{"cluster.local", f.ca}, [2]string{"other.example", otherCA})) + `}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		url := fmt.Sprintf("https://localhost:%d/", port)
		ssl := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)

		out, code := curlTLS("--cacert", f.ca, "--resolve", resolve("localhost", port), "--cert", f.clientCert, "--key", f.clientKey, url)
		Expect(code).To(Equal(0), out)
		Expect(out).To(Equal("svid"))

		out = sClient(port, "localhost", f.ca, "", "", "-cert", otherCert, "-key", otherKey)
		Expect(out).To(ContainSubstring("Acceptable client certificate CA names"))
		Expect(out).To(ContainSubstring("other.example CA"))
		// The handshake went through: the listener answers (its HTTP/1.0
		// refusal, which sClient's request gets).
		Expect(out).To(ContainSubstring("server: outrigger"))

		out, code = curlTLS("--cacert", f.ca, "--resolve", resolve("localhost", port), "--cert", intruder.clientCert, "--key", intruder.clientKey, url)
		Expect(code).NotTo(Equal(0), out)
		Eventually(func() string { return statValue(s, ssl+"fail_verify_error") }).Should(Equal("1"))

		out, code = curlTLS("--cacert", f.ca, "--resolve", resolve("localhost", port), url)
		Expect(code).NotTo(Equal(0), out)
		Eventually(func() string { return statValue(s, ssl+"fail_verify_no_cert") }).Should(Equal("1"))
		Expect(statValue(s, ssl+"handshake")).To(Equal("2"))
	})

	It("verifies an upstream's SVID against its trust domain's bundle: 200 from the domain's CA, 503 and fail_verify_error from another CA minting the ID", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		Expect(os.MkdirAll(filepath.Join(dir, "other"), 0o700)).To(Succeed())
		intruder := newTLSFiles(filepath.Join(dir, "other"))
		good, bad := startTLSUpstream(f, false), startTLSUpstream(intruder, false)
		ts := upstreamTLS(", common_tls_context: {" + spiffeValidation([2]string{"cluster.local", f.ca}) + "}")
		port := freePort()
		s := Start(dir, tlsBootstrap(port, "", []string{`{filters: [` + routingHCM("%RESPONSE_CODE%", "good", "bad") + `]}`},
			tlsCluster("good", good, ts, ""), tlsCluster("bad", bad, ts, "")))

		code, body := fetch(fmt.Sprintf("http://127.0.0.1:%d/good", port))
		Expect(code).To(Equal(200), body)
		Expect(body).To(ContainSubstring("proto=HTTP/1.1"))
		code, body = fetch(fmt.Sprintf("http://127.0.0.1:%d/bad", port))
		Expect(code).To(Equal(503), body)
		Expect(body).To(ContainSubstring("CERTIFICATE_VERIFY_FAILED"))
		Eventually(func() string { return statValue(s, "cluster.bad.ssl.fail_verify_error") }).Should(Equal("1"))
		Expect(statValue(s, "cluster.good.ssl.handshake")).To(Equal("1"))
	})

	It("refuses a SPIFFE trust domain's workload_trust_domain and a trust bundle map from a file, by path", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		for _, tc := range []struct{ fields, want string }{
			{"trust_domains: [{name: cluster.local, trust_bundle: {filename: " + f.ca + "}, workload_trust_domain: tenant}]",
				"trust_domains[0].workload_trust_domain"},
			{"trust_bundles: {filename: " + f.ca + "}", "trust_bundles.filename"},
		} {
			chain := `{filters: [` + directHCM("svid", "") + `],
  transport_socket: ` + f.transportSocket("", `, validation_context: {custom_validator_config: {name: envoy.tls.cert_validator.spiffe,
  typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig, `+tc.fields+`}}}`) + `}`
			r, _ := validate("spiffe.yaml", tlsBootstrap(freePort(), "", []string{chain}))
			Expect(r.ExitCode).To(Equal(1), r.Stdout+r.Stderr)
			Expect(r.Stdout + r.Stderr).To(ContainSubstring(tc.want))
		}
	})
})
