package e2e

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

var _ = Describe("TLS watched directories", func() {
	It("rotates a secret's certificate when its watched_directory's ..data link is swapped, keeping it when the new files are bad", func() {
		// The SDS file lives elsewhere and never changes: only the
		// secret's own watched_directory can notice the swap.
		m := newMountedSecret("watched CA", func(mount string) string { return `, watched_directory: {path: ` + mount + `}` })
		dir, f, mount, sdsFile := m.dir, m.f, m.mount, m.sdsFile
		renewed, again := m.issue(), m.issue()
		port := freePort()
		chain := `{filters: [` + directHCM("watched", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: server_cert, sds_config: {path_config_source: {path: ` + sdsFile + `}}}]}}}}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		first := servedSerial(port, f)
		Expect(statValue(s, "sds.server_cert.key_rotation_failed")).To(Equal("0"))

		secretVolume(mount, "2", map[string][]byte{"tls.crt": renewed.CertPEM, "tls.key": renewed.KeyPEM})
		want := renewed.Cert.SerialNumber.Text(16)
		Expect(want).NotTo(Equal(first))
		Eventually(func() string { return servedSerial(port, f) }, 5*time.Second, 50*time.Millisecond).Should(Equal(want))
		Expect(s.Get("/certs").Body).To(ContainSubstring(want))
		Expect(statValue(s, "sds.server_cert.key_rotation_failed")).To(Equal("0"))
		// The SDS file was not read again.
		Expect(statValue(s, "sds.server_cert.update_success")).To(Equal("1"))

		// A key that does not match the certificate: the renewed
		// certificate stays, the failure is counted and logged.
		secretVolume(mount, "3", map[string][]byte{"tls.crt": again.CertPEM, "tls.key": renewed.KeyPEM})
		Eventually(func() string { return statValue(s, "sds.server_cert.key_rotation_failed") }, 5*time.Second, 50*time.Millisecond).Should(Equal("1"))
		Eventually(s.Stderr).Should(ContainSubstring("Failed to reload certificates"))
		Expect(servedSerial(port, f)).To(Equal(want))

		// Good files again: rotated.
		secretVolume(mount, "4", map[string][]byte{"tls.crt": again.CertPEM, "tls.key": again.KeyPEM})
		Eventually(func() string { return servedSerial(port, f) }, 5*time.Second, 50*time.Millisecond).Should(Equal(again.Cert.SerialNumber.Text(16)))
	})

	It("follows the certificate files' own directory when the secret names no watched_directory, and refuses one in a static context", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		ca, err := tlstest.NewCA("moved CA")
		Expect(err).NotTo(HaveOccurred())
		f.caPool.AddCert(ca.Cert)
		renewed, err := ca.Issue(tlstest.Options{CommonName: "localhost", DNS: []string{"localhost"}})
		Expect(err).NotTo(HaveOccurred())
		certs := filepath.Join(dir, "certs")
		Expect(os.MkdirAll(certs, 0o700)).To(Succeed())
		// The key is moved into place first and the certificate last, as a
		// tool rotating both does: the end state is served.
		crt, key := filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key")
		writeFile(crt, readFile(f.cert))
		writeFile(key, readFile(f.key))
		sdsDir := filepath.Join(dir, "sds")
		Expect(os.MkdirAll(sdsDir, 0o700)).To(Succeed())
		sdsFile := filepath.Join(sdsDir, "sds.yaml")
		writeFile(sdsFile, sdsResponse("1", "server_cert", `{certificate_chain: {filename: `+crt+`}, private_key: {filename: `+key+`}}`))
		port := freePort()
		chain := `{filters: [` + directHCM("moved", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: server_cert, sds_config: {path_config_source: {path: ` + sdsFile + `}}}]}}}}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		Expect(servedSerial(port, f)).NotTo(Equal(renewed.Cert.SerialNumber.Text(16)))
		replaceFile(key, string(renewed.KeyPEM))
		replaceFile(crt, string(renewed.CertPEM))
		Eventually(func() string { return servedSerial(port, f) }, 5*time.Second, 50*time.Millisecond).Should(Equal(renewed.Cert.SerialNumber.Text(16)))
		// The mismatch between the two moves may or may not have been
		// read, depending on when the watch woke.
		Expect(statValue(s, "sds.server_cert.key_rotation_failed")).To(MatchRegexp(`^[01]$`))

		// In a listener's own tls_certificates, Envoy never reloads the
		// files: the field is refused rather than ignored.
		static := `{filters: [` + directHCM("static", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + crt + `}, private_key: {filename: ` + key + `}, watched_directory: {path: ` + certs + `}}]}}}}`
		bad := filepath.Join(dir, "static.yaml")
		writeFile(bad, tlsBootstrap(freePort(), "", []string{static}))
		res := Run("--mode", "validate", "-c", bad)
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("common_tls_context.tls_certificates[0].watched_directory: Envoy follows a watched directory only in a secret delivered by SDS"))
	})
})
