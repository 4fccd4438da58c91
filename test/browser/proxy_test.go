package browser

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sidecar is the built sidecar binary started for one test, with the
// address of its admin interface and of its one data-plane listener.
type sidecar struct {
	admin    string // host:port
	listener string // host:port
}

// bootstrap routes every request of the "front" listener to the cluster
// "web", whose one endpoint is the upstream. The admin binds a free
// loopback port, which --admin-address-path reports.
const bootstrap = `admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: front
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: proxy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: front
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: web}
          http_filters:
          - name: proxy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: web
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: web
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
`

// startSidecar starts SIDECAR_BIN in front of a real upstream and waits,
// within bounds, until its admin and its listener answer. The process is
// stopped (SIGTERM, then SIGKILL) when the test ends; its log is shown if
// the test failed.
func startSidecar(t *testing.T) *sidecar {
	t.Helper()
	bin := os.Getenv("SIDECAR_BIN")
	if bin == "" {
		t.Fatal("SIDECAR_BIN is not set: run `make test-browser`, or build with `make build` and set SIDECAR_BIN=bin/sidecar")
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello from the upstream\n")
	}))
	t.Cleanup(upstream.Close)
	upPort := upstream.Listener.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	port := freePort(t)
	config := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, bootstrap, port, upPort), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "admin.addr")
	logFile, err := os.Create(filepath.Join(dir, "sidecar.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", config, "--admin-address-path", addrFile, "-l", "info", "--disable-hot-restart")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("sidecar log:\n%s", b)
		}
	})

	s := &sidecar{listener: fmt.Sprintf("127.0.0.1:%d", port)}
	waitFor(t, 10*time.Second, "the sidecar's admin address", func() bool {
		select {
		case <-exited:
			t.Fatalf("the sidecar exited before its admin came up")
		default:
		}
		b, err := os.ReadFile(addrFile)
		s.admin = strings.TrimSpace(string(b))
		return err == nil && strings.Contains(s.admin, ":") && !strings.HasSuffix(s.admin, ":")
	})
	waitFor(t, 10*time.Second, "the sidecar to be LIVE", func() bool {
		code, _ := get(t, "http://"+s.admin+"/ready")
		return code == http.StatusOK
	})
	return s
}

// traffic sends n requests through the sidecar's listener, each bounded,
// and fails the test unless every one reached the upstream.
func (s *sidecar) traffic(t *testing.T, n int) {
	t.Helper()
	for range n {
		code, body := get(t, "http://"+s.listener+"/")
		if code != http.StatusOK || !strings.Contains(body, "hello from the upstream") {
			t.Fatalf("request through the proxy: %d %q", code, body)
		}
	}
}

// get returns the status and body of a GET, or 0 when it failed.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req) // bounded by ctx
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond every 100 ms until it holds, failing the test after
// limit. The limits are generous: they only keep a broken run from hanging.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
