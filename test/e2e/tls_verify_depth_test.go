package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Downstream TLS max_verify_depth", func() {
	It("accepts a client certificate issued by trusted_ca at depth 1 and refuses it at depth 0, counted in fail_verify_error", func() {
		needTool("curl")
		for _, depth := range []int{1, 0} {
			s, f, port := startMTLS("depth", fmt.Sprintf("max_verify_depth: %d", depth))
			url := fmt.Sprintf("https://localhost:%d/", port)
			out, code := curlTLS("--cacert", f.ca, "--cert", f.clientCert, "--key", f.clientKey, url)
			ssl := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)
			if depth == 1 {
				Expect(code).To(BeZero(), out)
				Expect(out).To(Equal("depth"))
				Expect(statValue(s, ssl+"fail_verify_error")).To(Equal("0"))
				continue
			}
			Expect(code).NotTo(BeZero(), "served a chain deeper than max_verify_depth: %s", out)
			Eventually(func() string { return statValue(s, ssl+"fail_verify_error") }).Should(Equal("1"))
			Expect(statValue(s, ssl+"handshake")).To(Equal("0"))
		}
	})
})

// startMTLS starts a sidecar whose listener answers body to clients with
// a certificate of its CA (required), with the validation_context fields
// extra besides trusted_ca.
func startMTLS(body, extra string) (*Sidecar, *tlsFiles, int) {
	GinkgoHelper()
	dir := newDir()
	f := newTLSFiles(dir)
	port := freePort()
	chain := `{filters: [` + directHCM(body, "") + `],
  transport_socket: ` + f.transportSocket("require_client_certificate: true,",
		fmt.Sprintf(`, validation_context: {trusted_ca: {filename: %s}, %s}`, f.ca, extra)) + `}`
	return Start(dir, tlsBootstrap(port, "", []string{chain})), f, port
}
