package e2e

import (
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("TLS certificates from PKCS#12", func() {
	It("serves the certificate of a PKCS#12 file made by openssl pkcs12 -export, with its password, and refuses a wrong one by path", func() {
		needTool("openssl")
		dir := newDir()
		f := newTLSFiles(dir)
		p12 := filepath.Join(dir, "server.p12")
		runOpenSSL("", "pkcs12", "-export", "-in", f.cert, "-inkey", f.key, "-certfile", f.ca, "-out", p12, "-passout", "pass:p12-secret")
		chain := func(password string) string {
			return `{filters: [` + directHCM("pkcs12", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificates: [{pkcs12: {filename: ` + p12 + `}, password: {inline_string: ` + password + `}}]}}}}`
		}
		port := freePort()
		s := Start(dir, tlsBootstrap(port, "", []string{chain("p12-secret")}))
		Expect(servedSerial(port, f)).NotTo(BeEmpty())
		// The chain in the file is served: openssl sees the CA after the leaf.
		out := runOpenSSL("", "s_client", "-connect", fmt.Sprintf("127.0.0.1:%d", port), "-servername", "localhost", "-CAfile", f.ca, "-showcerts")
		Expect(strings.Count(out, "-----BEGIN CERTIFICATE-----")).To(Equal(2), out)
		Expect(out).To(ContainSubstring("Verify return code: 0 (ok)"))
		Expect(s.Get("/certs").Body).To(ContainSubstring(`"path": "` + p12 + `"`))

		bad := filepath.Join(dir, "bad.yaml")
		writeFile(bad, tlsBootstrap(freePort(), "", []string{chain("wrong")}))
		res := Run("--mode", "validate", "-c", bad)
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("common_tls_context.tls_certificates[0].pkcs12: Failed to load pkcs12 from " + p12))
	})
})
