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
	It("serves with keys in the legacy PEM encryption and in encrypted PKCS#8 (pkcs8 -topk8, genpkey -aes256, from a static secret) with their passwords; refuses a wrong password by path", func() {
		needTool("openssl")
		needTool("curl")
		dir := newDir()
		f := newTLSFiles(dir)
		legacy := filepath.Join(dir, "server-enc.pem")
		runOpenSSL("", "ec", "-in", f.key, "-aes256", "-passout", "pass:secret", "-out", legacy)
		Expect(os.ReadFile(legacy)).To(ContainSubstring("Proc-Type: 4,ENCRYPTED"))
		pkcs8 := filepath.Join(dir, "server-pkcs8.pem")
		runOpenSSL("", "pkcs8", "-topk8", "-in", f.key, "-v2", "aes-256-cbc", "-passout", "pass:secret", "-out", pkcs8)
		Expect(os.ReadFile(pkcs8)).To(ContainSubstring("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
		// A fresh key from genpkey, encrypted as it is written, with a
		// self-signed certificate for gen.example.com.
		genKey, genCert := filepath.Join(dir, "gen-key.pem"), filepath.Join(dir, "gen-cert.pem")
		runOpenSSL("", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256", "-pass", "pass:s3cret", "-out", genKey)
		Expect(os.ReadFile(genKey)).To(ContainSubstring("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
		runOpenSSL("", "req", "-new", "-x509", "-key", genKey, "-passin", "pass:s3cret", "-subj", "/CN=gen.example.com",
			"-addext", "subjectAltName=DNS:gen.example.com", "-days", "1", "-out", genCert)
		password := filepath.Join(dir, "password")
		Expect(os.WriteFile(password, []byte("secret"), 0o600)).To(Succeed())

		tlsContext := func(common string) string {
			return `{name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext, common_tls_context: {` + common + `}}}`
		}
		chain := func(serverName, key, pw string) string {
			return `{filter_chain_match: {server_names: [` + serverName + `]}, transport_socket: ` +
				tlsContext(`tls_certificates: [{certificate_chain: {filename: `+f.cert+`}, private_key: {filename: `+key+`}, password: `+pw+`}]`) +
				`, filters: [` + directHCM(strings.Split(serverName, ".")[0], "") + `]}`
		}
		port := freePort()
		cfg := tlsBootstrap(port, tlsInspector, []string{
			chain("legacy.example.com", legacy, "{filename: "+password+"}"),
			chain("pkcs8.example.com", pkcs8, "{filename: "+password+"}"),
			`{filter_chain_match: {server_names: [gen.example.com]}, transport_socket: ` + tlsContext(`tls_certificate_sds_secret_configs: [{name: gen}]`) +
				`, filters: [` + directHCM("gen", "") + `]}`,
		}) + `
  secrets:
  - {name: gen, tls_certificate: {certificate_chain: {filename: ` + genCert + `}, private_key: {filename: ` + genKey + `}, password: {inline_string: s3cret}}}
`
		Start(dir, cfg)
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.caPool, ServerName: "legacy.example.com"}}}
		r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("legacy"))
		out, code := curlTLS("--cacert", f.ca, "--resolve", resolve("pkcs8.example.com", port), fmt.Sprintf("https://pkcs8.example.com:%d/", port))
		Expect(code).To(Equal(0), out)
		Expect(out).To(Equal("pkcs8"))
		out = sClient(port, "gen.example.com", genCert, "", "", "-verify_return_error", "-verify_hostname", "gen.example.com")
		Expect(out).To(ContainSubstring("Verify return code: 0 (ok)"))
		// The handshake's CertificateVerify was signed with the decrypted
		// key; the HTTP/1.0 request then gets the codec's own answer.
		Expect(out).To(ContainSubstring("s:CN = gen.example.com"))
		Expect(out).To(ContainSubstring("HTTP/1.1 426 Upgrade Required"))

		for _, key := range []string{legacy, pkcs8} {
			res, _ := validate("wrong.yaml", tlsBootstrap(freePort(), "", []string{chain("a.example.com", key, "{inline_string: nope}")}))
			Expect(res.ExitCode).To(Equal(1))
			Expect(res.Stdout + res.Stderr).To(ContainSubstring("tls_certificates[0].private_key: " + key + ": "))
			Expect(res.Stdout + res.Stderr).To(ContainSubstring("cannot decrypt the private key with the password"))
		}
		res, _ := validate("nopassword.yaml", tlsBootstrap(freePort(), "", []string{strings.Replace(chain("a.example.com", pkcs8, "{inline_string: x}"), ", password: {inline_string: x}", "", 1)}))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stdout + res.Stderr).To(ContainSubstring("tls_certificates[0].private_key: " + pkcs8 + ": the private key is encrypted (ENCRYPTED PRIVATE KEY) and no password is configured"))
	})
})
