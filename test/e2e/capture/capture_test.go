// Package capture tests transparent capture for real: network namespaces
// and a veth pair stand for a pod and the network around it, `sidecar
// capture` installs its nf_tables rules in the pod's namespace, and the
// built sidecar runs there as the proxy's user with the capture-mode
// bootstrap the injector generates. It needs root (namespaces, setns,
// nf_tables); `make test-capture` runs it.
package capture

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
)

// The proxy's user in the test: not the test's own (root), so that the
// rules tell the two apart.
const proxyUID, proxyGID = 65532, 65532

// Ports inside the pod's namespace (nothing else binds there).
const (
	adminPort   = 15000
	appPort     = 8080
	upPort      = 9090
	handoffPort = 7070
	// httpPort is a port of the peer that the proxy has an HTTP listener
	// for: a call to it is handed to that listener, whose route goes to
	// the ORIGINAL_DST cluster (the router's pick reads the connection's
	// original destination).
	httpPort = 9091
)

// ioTimeout bounds every wait.
const ioTimeout = 10 * time.Second

// captureBootstrap is the bootstrap the injector gives a dual-stack pod
// with capture (virtualOutbound, virtualInbound and their ORIGINAL_DST
// clusters), and captureOverlay what the test adds over it with
// --config-yaml: a listener for port 7070 that only a use_original_dst
// hand-off reaches (bind_to_port: false, Istio's shape), forwarding to the
// peer's server, and an HTTP listener for the peer's port 9091 whose route
// goes to the ORIGINAL_DST cluster.
func captureBootstrap() string {
	return inject.CaptureBootstrap(adminPort, inject.DefaultProbePort, true)
}

func captureOverlay(peerIP string) string {
	return fmt.Sprintf(`
static_resources:
  listeners:
  - name: handoff
    stat_prefix: handoff
    bind_to_port: false
    address: {socket_address: {address: 0.0.0.0, port_value: %[1]d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
          stat_prefix: handoff
          cluster: peer
  - name: http
    stat_prefix: http_%[4]d
    address: {socket_address: {address: 0.0.0.0, port_value: %[4]d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: outbound_%[4]d
          route_config:
            virtual_hosts:
            - {name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: PassthroughCluster}}]}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: peer
    connect_timeout: 10s
    load_assignment:
      cluster_name: peer
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: %[2]s, port_value: %[3]d}}}
`, handoffPort, peerIP, upPort, httpPort)
}

// server is an HTTP server that answers its name and records the remote
// addresses of its requests.
type server struct {
	name    string
	mu      sync.Mutex
	remotes []string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.remotes = append(s.remotes, r.RemoteAddr)
	s.mu.Unlock()
	_, _ = io.WriteString(w, s.name)
}

func (s *server) lastRemoteIP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.remotes) == 0 {
		return ""
	}
	host, _, _ := net.SplitHostPort(s.remotes[len(s.remotes)-1])
	return host
}

func serveHTTP(t *testing.T, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: ioTimeout}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// client is an HTTP client whose connections are opened in a namespace,
// one connection per request.
func client(ns string) *http.Client {
	return &http.Client{
		Timeout:   ioTimeout,
		Transport: &http.Transport{DialContext: dialer(ns), DisableKeepAlives: true},
	}
}

// get fetches a URL and returns its body, failing the test on any error.
func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// sidecarBinary is SIDECAR_BIN (make test-capture sets it), or a sidecar
// built for the test.
func sidecarBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SIDECAR_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "sidecar")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/outrigger-dev/outrigger/cmd/sidecar").CombinedOutput(); err != nil {
			t.Fatalf("building the sidecar: %v\n%s", err, out)
		}
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// requireRoot skips, saying why, when the test cannot create namespaces.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: transparent capture tests need root (network namespaces, setns, nf_tables); run make test-capture as root")
	}
}

// captureRules runs `sidecar capture` in the namespace with args.
func captureRules(t *testing.T, bin, ns string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, bin, "capture"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// install runs `sidecar capture` with args and fails the test if it
// fails, or skips it, saying so, when the kernel has no nf_tables to
// take the rules.
func install(t *testing.T, bin, ns string, args ...string) {
	t.Helper()
	out, err := captureRules(t, bin, ns, args...)
	if err != nil && strings.Contains(out, "does it have nf_tables") {
		t.Skipf("SKIPPED: this kernel refuses nf_tables nat rules: %s", out)
	}
	if err != nil {
		t.Fatalf("sidecar capture %v: %v\n%s", args, err, out)
	}
}

// ruleCount counts the rules of the proxy's chains in a namespace, read
// back from the kernel; -1 when the tables are missing.
func ruleCount(t *testing.T, ns string) int {
	t.Helper()
	n := 0
	err := inNetns(ns, func() error {
		conn, err := nftables.New()
		if err != nil {
			return err
		}
		for _, fam := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
			chains, err := conn.ListChainsOfTableFamily(fam)
			if err != nil {
				return err
			}
			found := false
			for _, ch := range chains {
				if ch.Table.Name != "outrigger" {
					continue
				}
				found = true
				rules, err := conn.GetRules(ch.Table, ch)
				if err != nil {
					return err
				}
				n += len(rules)
			}
			if !found {
				n = -1
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the rules of %s: %v", ns, err)
	}
	return n
}

// startSidecar runs the sidecar in the pod's namespace as the proxy's
// user, from a copy of the binary that user can read, and waits until
// its admin says LIVE.
func startSidecar(t *testing.T, bin string, p *pod, cfg, overlay string) *http.Client {
	t.Helper()
	return runSidecar(t, bin, p.app, true, cfg, "--config-yaml", overlay)
}

// runSidecar runs the sidecar in namespace ns with the bootstrap cfg and
// args, as the proxy's user (asProxy, without capabilities) or as root,
// and waits until its admin (on adminPort) says LIVE.
func runSidecar(t *testing.T, bin, ns string, asProxy bool, cfg string, args ...string) *http.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "ocap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	proxyBin := filepath.Join(dir, "sidecar")
	if err := os.WriteFile(proxyBin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "sidecar.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	argv := []string{"--net=/run/netns/" + ns}
	if asProxy {
		argv = append(argv, "-S", strconv.Itoa(proxyUID), "-G", strconv.Itoa(proxyGID))
	}
	argv = append(argv, "--", proxyBin, "-c", cfgPath, "--concurrency", "1", "--log-level", "info")
	cmd := exec.Command("nsenter", append(argv, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("sidecar log:\n%s", out)
		}
	})
	admin := client(ns)
	deadline := time.Now().Add(ioTimeout)
	for {
		resp, err := admin.Get(fmt.Sprintf("http://127.0.0.1:%d/ready", adminPort))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.TrimSpace(string(b)) == "LIVE" {
				return admin
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("the sidecar did not become LIVE: %v\n%s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stat reads one stat's value from the admin's /stats (0 when absent).
func stat(t *testing.T, admin *http.Client, name string) int {
	t.Helper()
	body := get(t, admin, fmt.Sprintf("http://127.0.0.1:%d/stats?filter=^%s$", adminPort, strings.ReplaceAll(name, ".", `\.`)))
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("stat %s: %q", name, line)
			}
			return n
		}
	}
	return 0
}

// expectStats waits until every stat has its value (a request's stats
// may be counted just after its answer is sent), and reports those that
// never get it.
func expectStats(t *testing.T, admin *http.Client, when string, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for {
		wrong := map[string]int{}
		for name, v := range want {
			if got := stat(t, admin, name); got != v {
				wrong[name] = got
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for name, got := range wrong {
				t.Errorf("%s: %s = %d, want %d", when, name, got, want[name])
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCaptureRulesLifecycle(t *testing.T) {
	requireRoot(t)
	bin := sidecarBinary(t)
	p := newPod(t)

	install(t, bin, p.app, "--exclude-inbound-ports", "15000")
	first := ruleCount(t, p.app)
	if first <= 0 {
		t.Fatalf("rules after capture = %d, want some", first)
	}
	install(t, bin, p.app, "--exclude-inbound-ports", "15000")
	if got := ruleCount(t, p.app); got != first {
		t.Errorf("rules after a second run = %d, want %d (one copy)", got, first)
	}
	dry, err := captureRules(t, bin, p.app, "--dry-run", "--exclude-inbound-ports", "15000")
	if err != nil || !strings.Contains(dry, "tcp dport 15000 return") || !strings.Contains(dry, "redirect to :15001") {
		t.Errorf("--dry-run: %v\n%s", err, dry)
	}
	if got := strings.Count(dry, "return") + strings.Count(dry, "redirect"); got != first {
		t.Errorf("--dry-run prints %d rules, the kernel has %d", got, first)
	}
	if out, err := captureRules(t, bin, p.app, "--cleanup"); err != nil {
		t.Fatalf("sidecar capture --cleanup: %v\n%s", err, out)
	}
	if got := ruleCount(t, p.app); got != -1 {
		t.Errorf("after --cleanup the tables are still there (%d rules)", got)
	}

	for _, bad := range [][]string{
		{"--include-inbound-ports", "80,70000"},
		{"--exclude-outbound-cidrs", "10.0.0.0/33"},
		{"--inbound-capture-port", "0"},
		{"--no-such-flag"},
	} {
		out, err := captureRules(t, bin, p.app, bad...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out, "error: capture:") {
			t.Errorf("sidecar capture %v: %v, want exit 1 with a message\n%s", bad, err, out)
		}
	}
}

func TestCaptureTraffic(t *testing.T) {
	requireRoot(t)
	bin := sidecarBinary(t)
	p := newPod(t)

	app := &server{name: "app"}
	serveHTTP(t, listen(t, p.app, "tcp4", fmt.Sprintf("0.0.0.0:%d", appPort)), app)
	serveHTTP(t, listen(t, p.app, "tcp6", fmt.Sprintf("[::]:%d", appPort)), app)
	up := &server{name: "upstream"}
	serveHTTP(t, listen(t, p.peer, "tcp4", fmt.Sprintf("0.0.0.0:%d", upPort)), up)
	serveHTTP(t, listen(t, p.peer, "tcp6", fmt.Sprintf("[::]:%d", upPort)), up)

	// The peer's IPv6 address is excluded from outbound capture.
	install(t, bin, p.app, "--proxy-uid", strconv.Itoa(proxyUID), "--proxy-gid", strconv.Itoa(proxyGID),
		"--exclude-inbound-ports", strconv.Itoa(adminPort), "--exclude-outbound-cidrs", p.peerIP6+"/128")
	admin := startSidecar(t, bin, p, captureBootstrap(), captureOverlay(p.peerIP))

	// Inbound: the peer calls the app's address; the proxy's inbound
	// listener takes the connection and its passthrough cluster connects
	// to the original destination, from the pod's own address.
	if got := get(t, client(p.peer), fmt.Sprintf("http://%s:%d/in", p.appIP, appPort)); got != "app" {
		t.Fatalf("inbound answer %q, want app", got)
	}
	if got := app.lastRemoteIP(); got != p.appIP {
		t.Errorf("the app saw the request from %s, want the proxy's connection from %s (the peer is %s)", got, p.appIP, p.peerIP)
	}
	expectStats(t, admin, "after the inbound call", map[string]int{
		"listener.0.0.0.0_15006.downstream_cx_total":          1,
		"cluster.InboundPassthroughCluster.upstream_cx_total": 1,
		"tcp.InboundPassthroughCluster.downstream_cx_total":   1,
		"cluster.InboundPassthroughCluster.membership_total":  1,
		"listener.0.0.0.0_15001.downstream_cx_total":          0,
	})

	// The app calling its own pod address goes over loopback: never
	// captured, it reaches the app directly.
	if got := get(t, client(p.app), fmt.Sprintf("http://%s:%d/self", p.appIP, appPort)); got != "app" {
		t.Fatalf("the app's call to itself: %q, want app", got)
	}
	expectStats(t, admin, "after the app's call to itself", map[string]int{
		"listener.0.0.0.0_15006.downstream_cx_total": 1,
		"listener.0.0.0.0_15001.downstream_cx_total": 0,
	})

	// Outbound: the app (the test, as root) calls the peer; the rules send
	// the connection to virtualOutbound, whose passthrough cluster opens
	// the real one as the proxy's user, which the rules let through (a
	// captured proxy connection would loop back to 15001).
	if got := get(t, client(p.app), fmt.Sprintf("http://%s:%d/out", p.peerIP, upPort)); got != "upstream" {
		t.Fatalf("outbound answer %q, want upstream", got)
	}
	expectStats(t, admin, "after the outbound call", map[string]int{
		"listener.0.0.0.0_15001.downstream_cx_total":   1,
		"cluster.PassthroughCluster.upstream_cx_total": 1,
		"tcp.PassthroughCluster.downstream_cx_total":   1,
	})
	clusters := get(t, admin, fmt.Sprintf("http://127.0.0.1:%d/clusters", adminPort))
	if want := fmt.Sprintf("PassthroughCluster::%s:%d::cx_total::1", p.peerIP, upPort); !strings.Contains(clusters, want) {
		t.Errorf("/clusters has no line %q:\n%s", want, clusters)
	}

	// use_original_dst: a call to a port the proxy has a listener for is
	// handed to that listener, which counts it (virtualOutbound does not).
	if got := get(t, client(p.app), fmt.Sprintf("http://%s:%d/handoff", p.peerIP, handoffPort)); got != "upstream" {
		t.Fatalf("hand-off answer %q, want upstream", got)
	}
	expectStats(t, admin, "after the hand-off call", map[string]int{
		"listener.handoff.downstream_cx_total":         1,
		"cluster.peer.upstream_cx_total":               1,
		"listener.0.0.0.0_15001.downstream_cx_total":   1,
		"cluster.PassthroughCluster.upstream_cx_total": 1,
	})

	// An HTTP listener taking a handed-off connection: its router sends
	// the request to the connection's original destination.
	up2 := &server{name: "upstream2"}
	serveHTTP(t, listen(t, p.peer, "tcp4", fmt.Sprintf("0.0.0.0:%d", httpPort)), up2)
	if got := get(t, client(p.app), fmt.Sprintf("http://%s:%d/http", p.peerIP, httpPort)); got != "upstream2" {
		t.Fatalf("HTTP hand-off answer %q, want upstream2", got)
	}
	expectStats(t, admin, "after the HTTP hand-off call", map[string]int{
		fmt.Sprintf("http.outbound_%d.downstream_rq_2xx", httpPort): 1,
		"cluster.PassthroughCluster.upstream_rq_total":              1,
		"cluster.PassthroughCluster.upstream_cx_total":              2,
		"listener.0.0.0.0_15001.downstream_cx_total":                1,
	})

	// IPv6: inbound connections are captured as IPv4 ones are (the
	// listener's "::" address takes them); outbound ones to an excluded
	// CIDR go straight to their destination.
	if got := get(t, client(p.peer), fmt.Sprintf("http://[%s]:%d/in6", p.appIP6, appPort)); got != "app" {
		t.Fatalf("IPv6 inbound answer %q, want app", got)
	}
	if got := app.lastRemoteIP(); got != p.appIP6 {
		t.Errorf("the app saw the IPv6 request from %s, want the proxy's connection from %s", got, p.appIP6)
	}
	if got := get(t, client(p.app), fmt.Sprintf("http://[%s]:%d/out6", p.peerIP6, upPort)); got != "upstream" {
		t.Fatalf("IPv6 outbound answer %q, want upstream", got)
	}
	expectStats(t, admin, "after the IPv6 calls", map[string]int{
		"listener.0.0.0.0_15006.downstream_cx_total":          2,
		"cluster.InboundPassthroughCluster.upstream_cx_total": 2,
		"listener.0.0.0.0_15001.downstream_cx_total":          1,
	})

	// The proxy's own user is never captured: a connection it opens goes
	// straight to the peer, and no listener of the proxy sees it.
	var body string
	if err := asUser(p.app, proxyUID, proxyGID, func() error {
		c, err := net.DialTimeout("tcp4", fmt.Sprintf("%s:%d", p.peerIP, upPort), ioTimeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(ioTimeout))
		if _, err := io.WriteString(c, "GET /own HTTP/1.1\r\nHost: peer\r\nConnection: close\r\n\r\n"); err != nil {
			return err
		}
		b, err := io.ReadAll(c)
		body = string(b)
		return err
	}); err != nil {
		t.Fatalf("a call as the proxy's user: %v", err)
	}
	if !strings.HasSuffix(body, "upstream") {
		t.Errorf("a call as the proxy's user got %q", body)
	}
	expectStats(t, admin, "after a call as the proxy's user", map[string]int{
		"listener.0.0.0.0_15001.downstream_cx_total":   1,
		"cluster.PassthroughCluster.upstream_cx_total": 2,
	})
}
