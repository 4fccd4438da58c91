package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// keyLogLines are the lines of an NSS key log, sorted ("" for a missing
// file: none).
func keyLogLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// fileKeyLog reads the key log at path.
func fileKeyLog(path string) []string {
	b, _ := os.ReadFile(path)
	return keyLogLines(b)
}

// withoutExporter drops the EXPORTER_SECRET lines OpenSSL writes and Go
// cannot (its exporter secret is not exposed; see docs/compat.md).
func withoutExporter(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.HasPrefix(l, "EXPORTER_SECRET ") })
}

// syncBuffer is a key log a test server writes from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return keyLogLines(s.b.Bytes())
}

var _ = Describe("TLS key_log", func() {
	It("writes the NSS key log of the listener's and the cluster's handshakes, the same lines their peers log", func() {
		needTool("curl")
		dir := newDir()
		f := newTLSFiles(dir)
		// An upstream logging its own keys: the reference for the
		// cluster's file.
		var upKeys syncBuffer
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		Expect(err).NotTo(HaveOccurred())
		up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("upstream")) }))
		up.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, KeyLogWriter: &upKeys}
		up.StartTLS()
		DeferCleanup(up.Close)
		upPort := up.Listener.Addr().(*net.TCPAddr).Port

		down, upFile, quiet := filepath.Join(dir, "down.keys"), filepath.Join(dir, "up.keys"), filepath.Join(dir, "quiet.keys")
		keyLog := func(path, ranges string) string {
			return `, key_log: {path: ` + path + ranges + `}`
		}
		port := freePort()
		chain := `{filters: [` + routingHCM("%RESPONSE_CODE%", "up", "quiet") + `], transport_socket: ` + f.transportSocket("", keyLog(down, `, remote_address_range: [{address_prefix: 127.0.0.0, prefix_len: 8}]`)) + `}`
		clusterTLS := func(path, ranges string) string {
			return upstreamTLS(`, common_tls_context: {validation_context: {trusted_ca: {filename: ` + f.ca + `}}` + keyLog(path, ranges) + `}`)
		}
		s := Start(dir, tlsBootstrap(port, "", []string{chain},
			tlsCluster("up", upPort, clusterTLS(upFile, ""), ""),
			// No connection of this cluster is from 10.0.0.0/8.
			tlsCluster("quiet", upPort, clusterTLS(quiet, `, local_address_range: [{address_prefix: 10.0.0.0, prefix_len: 8}]`), ""),
		), "--file-flush-interval-msec", "50")

		// curl logs its side of the listener's handshake (SSLKEYLOGFILE).
		curlKeys := filepath.Join(dir, "curl.keys")
		get := func(path string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "curl", "-sS", "--max-time", "10", "--http1.1", "--cacert", f.ca,
				"--resolve", resolve("a.example.com", port), fmt.Sprintf("https://a.example.com:%d/%s", port, path))
			cmd.Env = append(os.Environ(), "SSLKEYLOGFILE="+curlKeys)
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			return string(out)
		}
		Expect(get("up")).To(Equal("upstream"))
		want := withoutExporter(fileKeyLog(curlKeys))
		Expect(want).To(HaveLen(4)) // TLS 1.3's handshake and traffic secrets
		Expect(want[0]).To(MatchRegexp(`^[A-Z_0-9]+ [0-9a-f]{64} [0-9a-f]+$`))
		Eventually(func() []string { return fileKeyLog(down) }).Should(Equal(want))
		Eventually(func() []string { return fileKeyLog(upFile) }).Should(Equal(upKeys.lines()))
		Expect(upKeys.lines()).NotTo(BeEmpty())

		// The quiet cluster's connections are outside its range: its file
		// stays empty while the listener logs the second handshake.
		Expect(get("quiet")).To(Equal("upstream"))
		Eventually(func() []string { return fileKeyLog(down) }).Should(Equal(withoutExporter(fileKeyLog(curlKeys))))
		Expect(statValue(s, "cluster.quiet.ssl.handshake")).To(Equal("1"))
		Expect(fileKeyLog(quiet)).To(BeEmpty())
		// The upstream saw both clusters' handshakes; the up cluster's file
		// has its one.
		Expect(upKeys.lines()).To(ContainElements(fileKeyLog(upFile)))
		Expect(len(upKeys.lines())).To(BeNumerically(">", len(fileKeyLog(upFile))))
	})
})
