package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// runOpenSSL runs openssl with args (bounded) and fails the spec when it
// fails; it returns the combined output.
func runOpenSSL(stdin string, args ...string) string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openssl", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "openssl %v: %s", args, out)
	return string(out)
}

var _ = Describe("TLS private key passwords", func() {
	It("serves with a key in the legacy PEM encryption and its password; refuses a wrong password and encrypted PKCS#8", func() {
		needTool("openssl")
		dir := newDir()
		f := newTLSFiles(dir)
		encrypted := filepath.Join(dir, "server-enc.pem")
		runOpenSSL("", "ec", "-in", f.key, "-aes256", "-passout", "pass:secret", "-out", encrypted)
		Expect(os.ReadFile(encrypted)).To(ContainSubstring("Proc-Type: 4,ENCRYPTED"))
		pkcs8 := filepath.Join(dir, "server-pkcs8.pem")
		runOpenSSL("", "pkcs8", "-topk8", "-in", f.key, "-v2", "aes256", "-passout", "pass:secret", "-out", pkcs8)
		password := filepath.Join(dir, "password")
		Expect(os.WriteFile(password, []byte("secret"), 0o600)).To(Succeed())

		chain := func(key, pw string) string {
			return `{transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
  common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + f.cert + `}, private_key: {filename: ` + key + `}, password: ` + pw + `}]}}},
  filters: [` + directHCM("unlocked", "") + `]}`
		}
		port := freePort()
		Start(dir, tlsBootstrap(port, "", []string{chain(encrypted, "{filename: "+password+"}")}))
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.caPool, ServerName: "localhost"}}}
		r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("unlocked"))

		res, _ := validate("wrong.yaml", tlsBootstrap(freePort(), "", []string{chain(encrypted, "{inline_string: nope}")}))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stdout + res.Stderr).To(ContainSubstring("tls_certificates[0].private_key: " + encrypted + ": cannot decrypt the private key with the password"))
		res, _ = validate("pkcs8.yaml", tlsBootstrap(freePort(), "", []string{chain(pkcs8, "{inline_string: secret}")}))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stdout + res.Stderr).To(ContainSubstring("tls_certificates[0].private_key: " + pkcs8 + ": encrypted PKCS#8 keys (ENCRYPTED PRIVATE KEY) are not supported by Outrigger"))
	})
})
