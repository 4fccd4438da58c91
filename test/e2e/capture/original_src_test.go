package capture

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The original_src tests' ports and mark.
const (
	srcTCPPort  = 7001 // tcp_proxy behind the listener filter (IPv4 and IPv6)
	srcHTTPPort = 7002 // the HTTP connection manager with the HTTP filter
	srcHCMPort  = 7003 // the HTTP connection manager behind the listener filter
	srcUpPort   = 9090
	srcH2Port   = 9091 // the upstream's h2c server
	srcMark     = 123
	// srcTable routes the proxy's marked packets to the upstream;
	// localTable delivers the upstream's replies to the clients locally.
	srcTable, localTable = "200", "100"
)

// srcNet is the original_src setup of docs/traffic.md, for real: three
// namespaces, the clients', the proxy's and the upstream's, joined through
// the proxy's by two veth pairs. The upstream routes the clients' network
// through the proxy, whose policy routing delivers the replies addressed
// to the clients to its own (transparent) sockets. The proxy reaches the
// upstream over IPv4 only with the filters' mark (an ip rule), so that a
// connection that gets through proves SO_MARK; IPv6 has a plain route.
type srcNet struct {
	cli, px, up string
	// clientA and clientB are the clients' IPv4 addresses, clientA6 an
	// IPv6 one; proxyIP and proxyIP6 the proxy's on their side; upIP and
	// upIP6 the upstream's.
	clientA, clientB, clientA6 string
	proxyIP, proxyIP6          string
	upIP, upIP6                string
}

// newSrcNet creates the namespaces, links, addresses and routes, with
// unique names, deleted when the test ends.
func newSrcNet(t *testing.T) *srcNet {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	n := 200 + int(b[0])%50
	c4, u4 := fmt.Sprintf("10.%d.%d", n, b[1]), fmt.Sprintf("10.%d.%d", n, b[2])
	if b[1] == b[2] {
		u4 = fmt.Sprintf("10.%d.%d", n, b[2]^1)
	}
	s := &srcNet{
		cli: "osrc-cli-" + id, px: "osrc-px-" + id, up: "osrc-up-" + id,
		clientA: c4 + ".1", clientB: c4 + ".3", proxyIP: c4 + ".2", upIP: u4 + ".1",
		// Unique local addresses (fd00::/8), never routed anywhere.
		clientA6: canonical(fmt.Sprintf("fd5c:%s:%s::1", id[:4], id[4:])),
		proxyIP6: canonical(fmt.Sprintf("fd5c:%s:%s::2", id[:4], id[4:])),
		upIP6:    canonical(fmt.Sprintf("fd5d:%s:%s::1", id[:4], id[4:])),
	}
	pxUp6 := canonical(fmt.Sprintf("fd5d:%s:%s::2", id[:4], id[4:]))
	cliNet6 := canonical(fmt.Sprintf("fd5c:%s:%s::", id[:4], id[4:])) + "/64"
	t.Cleanup(func() {
		for _, ns := range []string{s.cli, s.px, s.up} {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	for _, ns := range []string{s.cli, s.px, s.up} {
		run(t, "ip", "netns", "add", ns)
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	vCli, vPxC, vPxU, vUp := "osc"+id, "osa"+id, "osb"+id, "osu"+id
	run(t, "ip", "link", "add", vCli, "netns", s.cli, "type", "veth", "peer", "name", vPxC, "netns", s.px)
	run(t, "ip", "link", "add", vPxU, "netns", s.px, "type", "veth", "peer", "name", vUp, "netns", s.up)
	// The clients' side: two IPv4 clients and one IPv6 one.
	run(t, "ip", "-n", s.cli, "addr", "add", s.clientA+"/24", "dev", vCli)
	run(t, "ip", "-n", s.cli, "addr", "add", s.clientB+"/24", "dev", vCli)
	run(t, "ip", "-n", s.cli, "-6", "addr", "add", s.clientA6+"/64", "dev", vCli, "nodad")
	run(t, "ip", "-n", s.px, "addr", "add", s.proxyIP+"/24", "dev", vPxC)
	run(t, "ip", "-n", s.px, "-6", "addr", "add", s.proxyIP6+"/64", "dev", vPxC, "nodad")
	// The upstream's side: over IPv4 the proxy has a host address and
	// reaches the upstream through the marked packets' table only.
	run(t, "ip", "-n", s.px, "addr", "add", u4+".2/32", "dev", vPxU)
	run(t, "ip", "-n", s.px, "-6", "addr", "add", pxUp6+"/64", "dev", vPxU, "nodad")
	run(t, "ip", "-n", s.up, "addr", "add", s.upIP+"/24", "dev", vUp)
	run(t, "ip", "-n", s.up, "-6", "addr", "add", s.upIP6+"/64", "dev", vUp, "nodad")
	for _, l := range [][2]string{{s.cli, vCli}, {s.px, vPxC}, {s.px, vPxU}, {s.up, vUp}} {
		run(t, "ip", "-n", l[0], "link", "set", l[1], "up")
	}
	// The upstream answers the clients through the proxy.
	run(t, "ip", "-n", s.up, "route", "add", c4+".0/24", "via", u4+".2")
	run(t, "ip", "-n", s.up, "-6", "route", "add", cliNet6, "via", pxUp6)
	// The proxy: marked packets reach the upstream...
	run(t, "ip", "-n", s.px, "route", "add", s.upIP, "dev", vPxU, "table", srcTable)
	run(t, "ip", "-n", s.px, "rule", "add", "fwmark", fmt.Sprint(srcMark), "lookup", srcTable)
	// ...and what comes back from it is delivered locally, whatever its
	// destination: the transparent sockets bound to the clients'
	// addresses take it.
	for _, v := range []string{"-4", "-6"} {
		run(t, "ip", "-n", s.px, v, "rule", "add", "iif", vPxU, "lookup", localTable)
	}
	run(t, "ip", "-n", s.px, "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", localTable)
	run(t, "ip", "-n", s.px, "-6", "route", "add", "local", "::/0", "dev", "lo", "table", localTable)
	// The upstream's address has no route but the marked one: strict
	// reverse path filtering would drop its packets.
	if err := inNetns(s.px, func() error {
		for _, dev := range []string{"all", "default", vPxU} {
			if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+dev+"/rp_filter", []byte("0"), 0o644); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("rp_filter in %s: %v", s.px, err)
	}
	return s
}

// srcBootstrap is the proxy's configuration: a tcp_proxy listener behind
// the original_src listener filter and an HTTP listener with the
// original_src HTTP filter, each with its own cluster of the upstream.
func srcBootstrap(s *srcNet) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: %[1]d}}}
static_resources:
  listeners:
  - name: tcp
    address: {socket_address: {address: 0.0.0.0, port_value: %[2]d}}
    listener_filters:
    - name: envoy.filters.listener.original_src
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.original_src.v3.OriginalSrc, mark: %[5]d}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp, cluster: up}
  - name: tcp6
    address: {socket_address: {address: "%[8]s", port_value: %[2]d}}
    listener_filters:
    - name: envoy.filters.listener.original_src
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.original_src.v3.OriginalSrc, mark: %[5]d}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp6, cluster: up6}
  - name: http
    address: {socket_address: {address: 0.0.0.0, port_value: %[3]d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: src
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {match: {prefix: /h2}, route: {cluster: up_h2}}
              - {match: {prefix: /}, route: {cluster: up_http}}
          http_filters:
          - name: envoy.filters.http.original_src
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.original_src.v3.OriginalSrc, mark: %[5]d}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  - name: hcm
    address: {socket_address: {address: 0.0.0.0, port_value: %[9]d}}
    listener_filters:
    - name: envoy.filters.listener.original_src
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.original_src.v3.OriginalSrc, mark: %[5]d}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: hcm
          route_config:
            virtual_hosts:
            - {name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: up_hcm}}]}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: up_h2
    connect_timeout: 5s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment: {cluster_name: up_h2, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %[4]s, port_value: %[10]d}}}}]}]}
  - name: up_hcm
    connect_timeout: 5s
    load_assignment: {cluster_name: up_hcm, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %[4]s, port_value: %[6]d}}}}]}]}
  - name: up
    connect_timeout: 5s
    load_assignment: {cluster_name: up, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %[4]s, port_value: %[6]d}}}}]}]}
  - name: up6
    connect_timeout: 5s
    load_assignment: {cluster_name: up6, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: "%[7]s", port_value: %[6]d}}}}]}]}
  - name: up_http
    connect_timeout: 5s
    load_assignment: {cluster_name: up_http, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %[4]s, port_value: %[6]d}}}}]}]}
`, adminPort, srcTCPPort, srcHTTPPort, s.upIP, srcMark, srcUpPort, s.upIP6, s.proxyIP6, srcHCMPort, srcH2Port)
}

// clientFrom is an HTTP client in namespace ns whose connections leave
// from local, one connection per request.
func clientFrom(ns, local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{
		Timeout: ioTimeout,
		Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := inNetns(ns, func() (err error) {
				c, err = d.DialContext(ctx, network, addr)
				return err
			})
			return c, err
		}},
	}
}

// lastRemote is the "ip:port" the server saw its last request from.
func (s *server) lastRemote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.remotes) == 0 {
		return ""
	}
	return s.remotes[len(s.remotes)-1]
}

// startSrcUpstream serves the upstream on both families, and over h2c
// (IPv4) on srcH2Port, where it records the remote addresses in h2.
func startSrcUpstream(t *testing.T, s *srcNet) (up, h2 *server) {
	up = &server{name: "upstream"}
	serveHTTP(t, listen(t, s.up, "tcp4", fmt.Sprintf("0.0.0.0:%d", srcUpPort)), up)
	serveHTTP(t, listen(t, s.up, "tcp6", fmt.Sprintf("[::]:%d", srcUpPort)), up)
	h2 = &server{name: "upstream"}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h2, ReadHeaderTimeout: ioTimeout, Protocols: protocols}
	ln := listen(t, s.up, "tcp4", fmt.Sprintf("0.0.0.0:%d", srcH2Port))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return up, h2
}

// TestOriginalSrc: with the original_src listener filter, tcp_proxy's
// upstream connections leave from the client's address (IPv4 and IPv6),
// and so do those of a connection manager's requests;
// with the HTTP filter, each request's do, and requests from different
// clients never share an upstream connection while a client's requests
// do.
func TestOriginalSrc(t *testing.T) {
	requireRoot(t)
	bin := sidecarBinary(t)
	s := newSrcNet(t)
	up, h2 := startSrcUpstream(t, s)
	admin := runSidecar(t, bin, s.px, false, srcBootstrap(s), "--disable-hot-restart")

	// The listener filter, tcp_proxy.
	for _, c := range []struct{ from, to string }{
		{s.clientA, s.proxyIP}, {s.clientB, s.proxyIP}, {s.clientA6, "[" + s.proxyIP6 + "]"},
	} {
		if got := get(t, clientFrom(s.cli, c.from), fmt.Sprintf("http://%s:%d/tcp", c.to, srcTCPPort)); got != "upstream" {
			t.Fatalf("tcp_proxy from %s: answer %q, want upstream", c.from, got)
		}
		if got := up.lastRemoteIP(); got != c.from {
			t.Errorf("through tcp_proxy, the upstream saw %s, want the client's %s", got, c.from)
		}
	}
	// The listener filter in front of a connection manager: its
	// requests' upstream connections leave from the client's address.
	for _, from := range []string{s.clientB, s.clientA} {
		if got := get(t, clientFrom(s.cli, from), fmt.Sprintf("http://%s:%d/hcm", s.proxyIP, srcHCMPort)); got != "upstream" {
			t.Fatalf("connection manager from %s: answer %q, want upstream", from, got)
		}
		if got := up.lastRemoteIP(); got != from {
			t.Errorf("through the listener filter and the connection manager, the upstream saw %s, want the client's %s", got, from)
		}
	}
	expectStats(t, admin, "after the tcp_proxy calls", map[string]int{
		"cluster.up_hcm.upstream_cx_total": 2,
		"cluster.up.upstream_cx_total":     2,
		"cluster.up6.upstream_cx_total":    1,
		"cluster.up.bind_errors":           0,
	})

	// The HTTP filter: A, B, then A again, to an HTTP/1.1 and an
	// HTTP/2 cluster.
	for _, c := range []struct {
		cluster, path string
		up            *server
	}{{"up_http", "/http", up}, {"up_h2", "/h2", h2}} {
		url := fmt.Sprintf("http://%s:%d%s", s.proxyIP, srcHTTPPort, c.path)
		var remotes []string
		for i, from := range []string{s.clientA, s.clientB, s.clientA} {
			if i == 2 {
				// The connections are back in the pool once no
				// request is active (the client may have its
				// answer first).
				expectStats(t, admin, "before client A's second request", map[string]int{
					"cluster." + c.cluster + ".upstream_rq_active": 0,
					"cluster." + c.cluster + ".upstream_cx_total":  2,
				})
			}
			if got := get(t, clientFrom(s.cli, from), url); got != "upstream" {
				t.Fatalf("%s from %s: answer %q, want upstream", c.cluster, from, got)
			}
			r := c.up.lastRemote()
			if host, _, _ := net.SplitHostPort(r); host != from {
				t.Errorf("%s: the upstream saw %s, want the client's %s", c.cluster, r, from)
			}
			remotes = append(remotes, r)
		}
		if remotes[0] == remotes[1] {
			t.Errorf("%s: clients A and B shared the upstream connection %s", c.cluster, remotes[0])
		}
		if remotes[2] != remotes[0] {
			t.Errorf("%s: client A's second request came on %s, want its pooled connection %s", c.cluster, remotes[2], remotes[0])
		}
		expectStats(t, admin, "after the HTTP calls to "+c.cluster, map[string]int{
			"cluster." + c.cluster + ".upstream_cx_total": 2,
			"cluster." + c.cluster + ".upstream_rq_total": 3,
		})
	}
	expectStats(t, admin, "after the HTTP calls", map[string]int{
		"cluster.up_h2.upstream_cx_http2_total": 2,
		"http.src.downstream_rq_2xx":            6,
	})
	url := fmt.Sprintf("http://%s:%d/http", s.proxyIP, srcHTTPPort)

	// The HTTP filter takes the request's client as the connection
	// manager determined it: with use_remote_address false, the last
	// x-forwarded-for entry. The next request on the same connection
	// starts again from the connection's address.
	keepAlive := clientFrom(s.cli, s.clientA)
	keepAlive.Transport.(*http.Transport).DisableKeepAlives = false
	defer keepAlive.CloseIdleConnections()
	for _, c := range []struct{ xff, want string }{{s.clientB, s.clientB}, {"", s.clientA}} {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.xff != "" {
			req.Header.Set("X-Forwarded-For", c.xff)
		}
		resp, err := keepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := up.lastRemoteIP(); got != c.want {
			t.Errorf("x-forwarded-for %q: the upstream saw %s, want %s", c.xff, got, c.want)
		}
	}
	expectStats(t, admin, "after the keep-alive calls", map[string]int{
		fmt.Sprintf("listener.0.0.0.0_%d.downstream_cx_total", srcHTTPPort): 7,
	})
}

// TestOriginalSrcWithoutCapability: a proxy without CAP_NET_ADMIN cannot
// set IP_TRANSPARENT: each upstream connection fails as a local connection
// failure (a 503 with Envoy's reason, a closed tcp_proxy connection), and
// the proxy goes on serving.
func TestOriginalSrcWithoutCapability(t *testing.T) {
	requireRoot(t)
	bin := sidecarBinary(t)
	s := newSrcNet(t)
	up, _ := startSrcUpstream(t, s)
	admin := runSidecar(t, bin, s.px, true, srcBootstrap(s), "--disable-hot-restart")

	resp, err := clientFrom(s.cli, s.clientA).Get(fmt.Sprintf("http://%s:%d/http", s.proxyIP, srcHTTPPort))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	const want = "upstream connect error or disconnect/reset before headers. reset reason: local connection failure"
	if resp.StatusCode != http.StatusServiceUnavailable || string(body) != want {
		t.Errorf("HTTP: %d %q, want 503 %q", resp.StatusCode, body, want)
	}

	var got []byte
	if err := inNetns(s.cli, func() error {
		c, err := net.DialTimeout("tcp4", fmt.Sprintf("%s:%d", s.proxyIP, srcTCPPort), ioTimeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(ioTimeout))
		_, _ = io.WriteString(c, "GET /tcp HTTP/1.1\r\nHost: up\r\n\r\n")
		got, err = io.ReadAll(c)
		return err
	}); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("tcp_proxy: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("tcp_proxy relayed %q, want the connection closed", got)
	}
	expectStats(t, admin, "after the failed calls", map[string]int{
		"cluster.up_http.upstream_cx_connect_fail": 1,
		"cluster.up.upstream_cx_connect_fail":      1,
		"http.src.downstream_rq_5xx":               1,
	})
	if r := up.lastRemote(); r != "" {
		t.Errorf("the upstream saw a request from %s", r)
	}
	if got := get(t, admin, fmt.Sprintf("http://127.0.0.1:%d/ready", adminPort)); strings.TrimSpace(got) != "LIVE" {
		t.Errorf("/ready after the failures: %q, want LIVE", got)
	}
}
