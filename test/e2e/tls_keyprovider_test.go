package e2e

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("TLS private key providers", func() {
	It("are refused by path, with why, in a bootstrap certificate and in a certificate from an SDS file", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		const why = "private_key_provider: not supported by Outrigger: private key providers (CryptoMB, QAT)"
		// A provider with a fallback key beside it: Envoy would use the
		// provider where its hardware is present; Outrigger has neither.
		cert := `{certificate_chain: {filename: ` + f.cert + `}, private_key: {filename: ` + f.key + `}, private_key_provider: {provider_name: cryptomb, fallback: true}}`
		tlsChain := func(ctc string) string {
			return `{filters: [` + directHCM("never", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: ` + ctc + `}}}`
		}

		res, _ := validate("provider.yaml", tlsBootstrap(freePort(), "", []string{tlsChain(`{tls_certificates: [` + cert + `]}`)}))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stdout + res.Stderr).To(ContainSubstring("common_tls_context.tls_certificates[0]." + why))

		sdsFile := filepath.Join(dir, "sds.yaml")
		writeFile(sdsFile, sdsResponse("1", "server_cert", cert))
		res, _ = validate("sds-provider.yaml", tlsBootstrap(freePort(), "", []string{tlsChain(
			`{tls_certificate_sds_secret_configs: [{name: server_cert, sds_config: {path_config_source: {path: ` + sdsFile + `}}}]}`)}))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stdout + res.Stderr).To(ContainSubstring("tls_certificate." + why))
		Expect(res.Stdout + res.Stderr).To(ContainSubstring(`secret "server_cert" could not be read from ` + sdsFile))
	})
})
