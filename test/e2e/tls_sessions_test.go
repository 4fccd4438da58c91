package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// sClient connects openssl s_client to the loopback port with SNI name,
// saving the session to sessOut and offering the one in sessIn (either
// may be ""), sends one HTTP/1.0 request and returns what it printed.
// Waiting for the answer lets a TLS 1.3 client read its ticket first.
func sClient(port int, name, caFile, sessIn, sessOut string, extra ...string) string {
	GinkgoHelper()
	args := []string{"s_client", "-connect", fmt.Sprintf("127.0.0.1:%d", port), "-servername", name, "-CAfile", caFile, "-ign_eof"}
	if sessIn != "" {
		args = append(args, "-sess_in", sessIn)
	}
	if sessOut != "" {
		args = append(args, "-sess_out", sessOut)
	}
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openssl", args...)
	cmd.Stdin = strings.NewReader("GET / HTTP/1.0\r\n\r\n")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "openssl %v: %s", args, out)
	return string(out)
}

// resumedBy reports whether s_client's output says the session was
// resumed ("Reused, TLSv1.3") rather than new.
func resumedBy(out string) bool {
	GinkgoHelper()
	switch {
	case strings.Contains(out, "\nReused, "):
		return true
	case strings.Contains(out, "\nNew, "):
		return false
	}
	Fail("s_client printed neither New nor Reused:\n" + out)
	return false
}

var _ = Describe("TLS session resumption", func() {
	It("resumes sessions by ticket, across restarts with shared session_ticket_keys, never when disabled, and within session_timeout only", func() {
		needTool("openssl")
		dir := newDir()
		f := newTLSFiles(dir)
		keyFile := filepath.Join(dir, "ticket.key")
		Expect(os.WriteFile(keyFile, []byte(strings.Repeat("k", 80)), 0o600)).To(Succeed())
		chain := func(name, downstream string) string {
			return `{filter_chain_match: {server_names: [` + name + `.example.com]}, transport_socket: ` + f.transportSocket(downstream, "") +
				// The proxy closes at once after its answer, which
				// s_client (-ign_eof) waits for.
				`, filters: [` + strings.Replace(directHCM(name, ""), "codec_type: AUTO", "codec_type: AUTO, delayed_close_timeout: 0s", 1) + `]}`
		}
		port := freePort()
		config := tlsBootstrap(port, tlsInspector, []string{
			chain("default", ""),
			chain("keys", `session_ticket_keys: {keys: [{filename: `+keyFile+`}]},`),
			chain("disabled", `disable_stateless_session_resumption: true,`),
			chain("timeout", `session_timeout: 3s,`),
		})
		s := Start(dir, config)
		sess := func(name, version string) string { return filepath.Join(dir, name+version+".sess") }
		for _, version := range []string{"-tls1_3", "-tls1_2"} {
			for _, name := range []string{"default", "keys", "disabled", "timeout"} {
				Expect(resumedBy(sClient(port, name+".example.com", f.ca, "", sess(name, version), version))).To(BeFalse(), name)
				if name == "disabled" {
					// No ticket, and no session ID (Go never resumes by
					// one): nothing for the client to keep.
					Expect(sess(name, version)).NotTo(BeAnExistingFile())
					continue
				}
				Expect(resumedBy(sClient(port, name+".example.com", f.ca, sess(name, version), "", version))).To(BeTrue(), name+version)
			}
		}
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.session_reused", port))).To(Equal("6"))
		// Past session_timeout, its tickets make new sessions; the others
		// still resume.
		time.Sleep(3500 * time.Millisecond)
		for _, version := range []string{"-tls1_3", "-tls1_2"} {
			Expect(resumedBy(sClient(port, "timeout.example.com", f.ca, sess("timeout", version), "", version))).To(BeFalse(), version)
			Expect(resumedBy(sClient(port, "default.example.com", f.ca, sess("default", version), "", version))).To(BeTrue(), version)
		}

		// A restarted proxy resumes the sessions of shared keys only.
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(10 * time.Second)).To(Equal(0))
		Start(newDir(), config)
		for _, version := range []string{"-tls1_3", "-tls1_2"} {
			Expect(resumedBy(sClient(port, "keys.example.com", f.ca, sess("keys", version), "", version))).To(BeTrue(), version)
			Expect(resumedBy(sClient(port, "default.example.com", f.ca, sess("default", version), "", version))).To(BeFalse(), version)
		}
	})
})
