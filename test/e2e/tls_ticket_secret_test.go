package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// ticketKeysResponse is a DiscoveryResponse file holding the secret
// "stek" of the session ticket key files keys, in order.
func ticketKeysResponse(version string, keys ...string) string {
	var list []string
	for _, k := range keys {
		list = append(list, "{filename: "+k+"}")
	}
	return fmt.Sprintf(`version_info: "%s"
resources:
- "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
  name: stek
  session_ticket_keys: {keys: [%s]}
`, version, strings.Join(list, ", "))
}

var _ = Describe("TLS session ticket keys from a secret", func() {
	It("issues tickets with the secret's first key, resumes those of every key listed, and follows the secret's rotation", func() {
		needTool("openssl")
		dir := newDir()
		f := newTLSFiles(dir)
		k1, k2 := filepath.Join(dir, "k1.key"), filepath.Join(dir, "k2.key")
		for _, k := range []string{k1, k2} {
			b := make([]byte, 80)
			_, err := rand.Read(b)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(k, b, 0o600)).To(Succeed())
		}
		sdsDir := filepath.Join(dir, "sds")
		Expect(os.MkdirAll(sdsDir, 0o700)).To(Succeed())
		sdsFile := filepath.Join(sdsDir, "stek.yaml")
		writeFile(sdsFile, ticketKeysResponse("1", k1))
		port := freePort()
		chain := `{transport_socket: ` + f.transportSocket(`session_ticket_keys_sds_secret_config: {name: stek, sds_config: {path_config_source: {path: `+sdsFile+`}}},`, "") +
			`, filters: [` + strings.Replace(directHCM("tickets", ""), "codec_type: AUTO", "codec_type: AUTO, delayed_close_timeout: 0s", 1) + `]}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		sess := func(name string) string { return filepath.Join(dir, name+".sess") }
		const version = "-tls1_2"

		Expect(resumedBy(sClient(port, "localhost", f.ca, "", sess("k1"), version))).To(BeFalse())
		Expect(resumedBy(sClient(port, "localhost", f.ca, sess("k1"), "", version))).To(BeTrue())

		// k2 first: it issues, k1's tickets still resume.
		replaceFile(sdsFile, ticketKeysResponse("2", k2, k1))
		Eventually(func() string { return statValue(s, "sds.stek.update_success") }, 5*time.Second, 50*time.Millisecond).Should(Equal("2"))
		Expect(resumedBy(sClient(port, "localhost", f.ca, sess("k1"), "", version))).To(BeTrue())
		Expect(resumedBy(sClient(port, "localhost", f.ca, "", sess("k2"), version))).To(BeFalse())

		// k1 gone: its tickets make new sessions, k2's resume.
		replaceFile(sdsFile, ticketKeysResponse("3", k2))
		Eventually(func() string { return statValue(s, "sds.stek.update_success") }, 5*time.Second, 50*time.Millisecond).Should(Equal("3"))
		Expect(resumedBy(sClient(port, "localhost", f.ca, sess("k1"), "", version))).To(BeFalse())
		Expect(resumedBy(sClient(port, "localhost", f.ca, sess("k2"), "", version))).To(BeTrue())
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.session_reused", port))).To(Equal("3"))

		// A key of the wrong length is rejected; k2 stays.
		short := filepath.Join(dir, "short.key")
		Expect(os.WriteFile(short, []byte("short"), 0o600)).To(Succeed())
		replaceFile(sdsFile, ticketKeysResponse("4", short))
		Eventually(func() string { return statValue(s, "sds.stek.update_rejected") }, 5*time.Second, 50*time.Millisecond).Should(Equal("1"))
		Expect(resumedBy(sClient(port, "localhost", f.ca, sess("k2"), "", version))).To(BeTrue())
	})
})
