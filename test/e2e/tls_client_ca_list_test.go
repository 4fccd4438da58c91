package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Downstream TLS suppress_client_ca_list", func() {
	It("names trusted_ca in the certificate request unless suppressed, verifying the client's certificate either way", func() {
		needTool("openssl")
		for _, suppress := range []bool{false, true} {
			s, f, port := startMTLS("calist", fmt.Sprintf("suppress_client_ca_list: %t", suppress))
			out := sClient(port, "localhost", f.ca, "", "", "-cert", f.clientCert, "-key", f.clientKey)
			if suppress {
				Expect(out).To(ContainSubstring("No client certificate CA names sent"))
			} else {
				Expect(out).To(ContainSubstring("Acceptable client certificate CA names"))
				Expect(out).To(ContainSubstring("Outrigger test CA"))
			}
			// A handshake counts once the required client certificate verified.
			ssl := fmt.Sprintf("listener.127.0.0.1_%d.ssl.", port)
			Eventually(func() string { return statValue(s, ssl+"handshake") }).Should(Equal("1"))
		}
	})
})
