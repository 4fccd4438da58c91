package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("tls_inspector max_client_hello_size and close_connection_on_client_hello_parsing_errors", func() {
	It("closes connections whose ClientHello is too large or not one at all", func() {
		needTool("curl")
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		inspector := `{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector,
  max_client_hello_size: 1024, close_connection_on_client_hello_parsing_errors: true}}`
		chains := []string{
			`{filter_chain_match: {transport_protocol: tls}, filters: [` + directHCM("chain-tls", "") + `], transport_socket: ` + f.transportSocket("", "") + `}`,
			`{filter_chain_match: {transport_protocol: raw_buffer}, filters: [` + directHCM("chain-plain", "") + `]}`,
		}
		s := Start(dir, tlsBootstrap(port, inspector, chains))

		// curl's ClientHello is well under 1 KiB.
		out, code := curlTLS("--cacert", f.ca, "--resolve", resolve("a.example.com", port), fmt.Sprintf("https://a.example.com:%d/", port))
		Expect(code).To(BeZero(), out)
		Expect(out).To(Equal("chain-tls"))

		// Plaintext is a parsing error: closed, not served by the
		// raw_buffer chain.
		out, code = curlTLS(fmt.Sprintf("http://127.0.0.1:%d/", port))
		Expect(code).NotTo(BeZero(), out)
		Expect(out).NotTo(ContainSubstring("chain-plain"))

		// A ClientHello padded past 1 KiB with ALPN names.
		var protos []string
		for i := range 60 {
			protos = append(protos, fmt.Sprintf("padding-protocol-%02d", i))
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
		err = tls.Client(c, &tls.Config{ServerName: "a.example.com", RootCAs: f.caPool, NextProtos: protos}).Handshake()
		Expect(err).To(HaveOccurred())
		Expect(len(strings.Join(protos, ""))).To(BeNumerically(">", 1024))

		Expect(statValue(s, "tls_inspector.tls_found")).To(Equal("1"))
		Expect(statValue(s, "tls_inspector.tls_not_found")).To(Equal("0"))
		Expect(statValue(s, "tls_inspector.client_hello_too_large")).To(Equal("1"))
	})
})
