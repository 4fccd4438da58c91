package httpconn

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// upgradeRequest is a WebSocket-style upgrade request for path.
func upgradeRequest(path string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Kept: yes\r\n\r\n"
}

// switchingUpstream answers every request with 101 when it asks for an
// upgrade (reporting the head it received on heads), then echoes bytes
// back upper-cased until the client closes; other requests get 400.
func switchingUpstream(t *testing.T, heads chan<- string) string {
	return rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		head := readRequestHead(r)
		heads <- head
		if !strings.Contains(strings.ToLower(head), "upgrade: websocket") {
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\nno")
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		buf := make([]byte, 256)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				_, _ = c.Write([]byte(strings.ToUpper(string(buf[:n]))))
			}
			if err != nil {
				return
			}
		}
	})
}

// upgradeProxy runs a proxy with routes to cluster "ws" at addr.
func upgradeProxy(t *testing.T, addr string, hcmUpgrades []*hcmv3.HttpConnectionManager_UpgradeConfig, routes ...*routev3.Route) *proxy {
	t.Helper()
	st := stats.NewStore()
	cl := newFakeCluster(st, "ws", false, addr)
	cfg := hcm(routeConfig(routes...))
	cfg.UpgradeConfigs = hcmUpgrades
	return startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"ws": cl}})
}

// withUpgrade adds a route upgrade_configs entry.
func withUpgrade(typ string, enabled *bool) func(*routev3.RouteAction) {
	return func(a *routev3.RouteAction) {
		u := &routev3.RouteAction_UpgradeConfig{UpgradeType: typ}
		if enabled != nil {
			u.Enabled = wrapperspb.Bool(*enabled)
		}
		a.UpgradeConfigs = append(a.UpgradeConfigs, u)
	}
}

func TestUpgradeWebSocket(t *testing.T) {
	heads := make(chan string, 4)
	addr := switchingUpstream(t, heads)
	off := false
	p := upgradeProxy(t, addr,
		[]*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "WebSocket"}},
		clusterRoute("/off", "ws", withUpgrade("websocket", &off)),
		clusterRoute("/", "ws"))

	c := dialRaw(t, p.addr)
	c.send(upgradeRequest("/chat"))
	resp, err := readHead(c.r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp, "HTTP/1.1 101 ") || !strings.Contains(resp, "\r\nupgrade: websocket\r\n") ||
		!strings.Contains(strings.ToLower(resp), "\r\nconnection: upgrade\r\n") || strings.Contains(resp, "content-length") {
		t.Fatalf("response head:\n%s", resp)
	}
	head := <-heads
	for _, want := range []string{"GET /chat HTTP/1.1\r\n", "\r\nconnection: Upgrade\r\n", "\r\nupgrade: websocket\r\n", "\r\nx-kept: yes\r\n"} {
		if !strings.Contains(head, want) {
			t.Errorf("upstream head lacks %q:\n%s", want, head)
		}
	}
	if got := p.gauge("http.test.downstream_cx_upgrades_active"); got != 1 {
		t.Errorf("downstream_cx_upgrades_active = %d during the tunnel, want 1", got)
	}
	for _, msg := range []string{"hello", "more bytes"} {
		c.send(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c.r, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.ToUpper(msg) {
			t.Fatalf("echo = %q, want %q", got, strings.ToUpper(msg))
		}
	}
	_ = c.Conn.(*net.TCPConn).CloseWrite()
	if !c.closed() {
		t.Error("the tunnel did not end after both sides closed")
	}
	p.waitCounter(t, "http.test.downstream_rq_completed", 1)
	if got := p.counter("http.test.downstream_cx_upgrades_total"); got != 1 {
		t.Errorf("downstream_cx_upgrades_total = %d, want 1", got)
	}
	eventually(t, "no active upgrade", func() bool { return p.gauge("http.test.downstream_cx_upgrades_active") == 0 })

	// The route disables the upgrade: 403, upgrade_failed, connection
	// closed, nothing sent upstream.
	c = dialRaw(t, p.addr)
	c.send(upgradeRequest("/off"))
	r, body := c.response("GET")
	if r.StatusCode != 403 || body != "" || !r.Close {
		t.Errorf("disabled route: status %d body %q close %v, want 403, empty, closed", r.StatusCode, body, r.Close)
	}
	p.waitCounter(t, "http.test.downstream_rq_ws_on_non_ws_route", 1)

	// An ordinary request on an upgrade route is served as usual.
	c = dialRaw(t, p.addr)
	c.send("GET /plain HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if r, body := c.response("GET"); r.StatusCode != 400 || body != "no" {
		t.Errorf("plain request: %d %q, want the upstream's 400", r.StatusCode, body)
	}
	if len(heads) != 1 {
		t.Errorf("%d requests reached the upstream after the tunnel, want 1 (the plain one)", len(heads))
	}
}

func TestUpgradeNotConfigured(t *testing.T) {
	heads := make(chan string, 4)
	addr := switchingUpstream(t, heads)
	on := true
	p := upgradeProxy(t, addr,
		[]*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket", Enabled: wrapperspb.Bool(false)}},
		clusterRoute("/on", "ws", withUpgrade("WEBSOCKET", &on)),
		clusterRoute("/", "ws"))

	// Disabled in the connection manager: 403.
	c := dialRaw(t, p.addr)
	c.send(upgradeRequest("/x"))
	if r, _ := c.response("GET"); r.StatusCode != 403 {
		t.Errorf("status %d, want 403", r.StatusCode)
	}
	// A type nobody configured: 403.
	c = dialRaw(t, p.addr)
	c.send(strings.Replace(upgradeRequest("/x"), "websocket", "spdy/3", 1))
	if r, _ := c.response("GET"); r.StatusCode != 403 {
		t.Errorf("unknown type: status %d, want 403", r.StatusCode)
	}
	// The route enables what the connection manager disables.
	c = dialRaw(t, p.addr)
	c.send(upgradeRequest("/on"))
	if head, err := readHead(c.r); err != nil || !strings.HasPrefix(head, "HTTP/1.1 101 ") {
		t.Errorf("route-enabled upgrade: %q %v, want 101", head, err)
	}
	p.waitCounter(t, "http.test.downstream_rq_ws_on_non_ws_route", 2)
}

func TestUpgradeRefusedByUpstream(t *testing.T) {
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.WriteString(c, "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\nnope")
	})
	p := upgradeProxy(t, addr, []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}, clusterRoute("/", "ws"))
	c := dialRaw(t, p.addr)
	c.send(upgradeRequest("/x"))
	r, body := c.response("GET")
	if r.StatusCode != 404 || body != "nope" || !r.Close {
		t.Errorf("got %d %q close %v, want the upstream's 404 and the connection closed", r.StatusCode, body, r.Close)
	}
}

func TestConnectTerminated(t *testing.T) {
	echoAddr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(c, r) })
	connectRoute := &routev3.Route{
		Name:  "connect",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "ws"},
			UpgradeConfigs: []*routev3.RouteAction_UpgradeConfig{{
				UpgradeType: "CONNECT", ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{},
			}},
		}},
	}
	p := upgradeProxy(t, echoAddr, nil, connectRoute)
	c := dialRaw(t, p.addr)
	c.send("CONNECT target.example:443 HTTP/1.1\r\nHost: target.example:443\r\n\r\nearly")
	head, err := readHead(c.r)
	if err != nil || !strings.HasPrefix(head, "HTTP/1.1 200 ") || strings.Contains(head, "content-length") || strings.Contains(head, "transfer-encoding") {
		t.Fatalf("head %q, %v: want 200 without framing", head, err)
	}
	got := make([]byte, len("early"))
	if _, err := io.ReadFull(c.r, got); err != nil || string(got) != "early" {
		t.Fatalf("echo %q %v", got, err)
	}
	_ = c.Conn.(*net.TCPConn).CloseWrite()
	if !c.closed() {
		t.Error("tunnel still open after both sides closed")
	}
	p.waitCounter(t, "http.test.downstream_cx_upgrades_total", 1)

	// A CONNECT with a body is malformed.
	c = dialRaw(t, p.addr)
	c.send("CONNECT target.example:443 HTTP/1.1\r\nHost: target.example:443\r\nContent-Length: 3\r\n\r\nabc")
	if r, _ := c.response("CONNECT"); r.StatusCode != 400 {
		t.Errorf("CONNECT with a body: %d, want 400", r.StatusCode)
	}
	// An ordinary request matches no connect_matcher route.
	c = dialRaw(t, p.addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if r, _ := c.response("GET"); r.StatusCode != 404 {
		t.Errorf("GET on a CONNECT-only table: %d, want 404", r.StatusCode)
	}
}

func TestConnectForwarded(t *testing.T) {
	heads := make(chan string, 1)
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		heads <- readRequestHead(r)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
		_, _ = io.Copy(c, r)
	})
	route := &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "ws"}}},
	}
	p := upgradeProxy(t, addr, []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "connect"}}, route)
	c := dialRaw(t, p.addr)
	c.send("CONNECT target.example:443 HTTP/1.1\r\nHost: target.example:443\r\n\r\n")
	head, err := readHead(c.r)
	if err != nil || !strings.HasPrefix(head, "HTTP/1.1 200 ") {
		t.Fatalf("head %q %v", head, err)
	}
	if h := <-heads; !strings.HasPrefix(h, "CONNECT target.example:443 HTTP/1.1\r\n") {
		t.Errorf("upstream got:\n%s", h)
	}
	c.send("ping")
	got := make([]byte, 4)
	if _, err := io.ReadFull(c.r, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo %q %v", got, err)
	}
}

// readHead reads a response head up to its blank line.
func readHead(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return b.String(), err
		}
		if line == "\r\n" {
			return b.String(), nil
		}
	}
}

func TestTunnelIdleTimeout(t *testing.T) {
	heads := make(chan string, 1)
	addr := switchingUpstream(t, heads)
	p := upgradeProxy(t, addr, []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}},
		clusterRoute("/", "ws", func(a *routev3.RouteAction) { a.IdleTimeout = durationpb.New(100 * time.Millisecond) }))
	c := dialRaw(t, p.addr)
	c.send(upgradeRequest("/x"))
	if head, err := readHead(c.r); err != nil || !strings.HasPrefix(head, "HTTP/1.1 101 ") {
		t.Fatalf("%q %v", head, err)
	}
	// Traffic keeps the tunnel up past the idle timeout...
	for range 3 {
		c.send("a")
		if b, err := c.r.ReadByte(); err != nil || b != 'A' {
			t.Fatalf("echo %q %v", b, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ...and silence ends it.
	if !c.closed() {
		t.Fatal("idle tunnel still open")
	}
	p.waitCounter(t, "http.test.downstream_rq_idle_timeout", 1)
}

func TestTunnelCutOnShutdown(t *testing.T) {
	heads := make(chan string, 1)
	addr := switchingUpstream(t, heads)
	p := upgradeProxy(t, addr, []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}, clusterRoute("/", "ws"))
	c := dialRaw(t, p.addr)
	c.send(upgradeRequest("/x"))
	if head, err := readHead(c.r); err != nil || !strings.HasPrefix(head, "HTTP/1.1 101 ") {
		t.Fatalf("%q %v", head, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.m.Shutdown(ctx); err == nil {
		t.Error("Shutdown returned before the tunnel ended")
	}
	if !c.closed() {
		t.Error("tunnel still open after the shutdown's deadline")
	}
}

func TestTunnelRequestTimeout(t *testing.T) {
	heads := make(chan string, 1)
	addr := switchingUpstream(t, heads)
	st := stats.NewStore()
	cfg := hcm(routeConfig(clusterRoute("/", "ws")))
	cfg.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}
	// No idle timeout: only request_timeout can end the tunnel.
	cfg.StreamIdleTimeout = durationpb.New(0)
	cfg.RequestTimeout = durationpb.New(300 * time.Millisecond)
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"ws": newFakeCluster(st, "ws", false, addr)}})
	c := dialRaw(t, p.addr)
	c.send(upgradeRequest("/x"))
	if head, err := readHead(c.r); err != nil || !strings.HasPrefix(head, "HTTP/1.1 101 ") {
		t.Fatalf("%q %v", head, err)
	}
	c.send("a")
	if b, err := c.r.ReadByte(); err != nil || b != 'A' {
		t.Fatalf("echo %q %v", b, err)
	}
	if !c.closed() {
		t.Fatal("tunnel open past request_timeout")
	}
	p.waitCounter(t, "http.test.downstream_rq_timeout", 1)
	if got := p.counter("http.test.downstream_rq_idle_timeout"); got != 0 {
		t.Errorf("downstream_rq_idle_timeout = %d, want 0", got)
	}
}

func TestUpgradeUpstreamFailures(t *testing.T) {
	st := stats.NewStore()
	connectRoute := &routev3.Route{
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "closed"},
			UpgradeConfigs: []*routev3.RouteAction_UpgradeConfig{{
				UpgradeType: "CONNECT", ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{},
			}},
		}},
	}
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cfg := hcm(routeConfig(connectRoute, clusterRoute("/", "h2")))
	cfg.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{
		"closed": newFakeCluster(st, "closed", false, closed),
		"h2":     newFakeCluster(st, "h2", true, closed),
	}})

	// A terminated CONNECT whose upstream refuses the connection: 503.
	c := dialRaw(t, p.addr)
	c.send("CONNECT target.example:443 HTTP/1.1\r\nHost: target.example:443\r\n\r\n")
	if r, body := c.response("CONNECT"); r.StatusCode != 503 || !strings.Contains(body, "connection") {
		t.Errorf("CONNECT to a closed port: %d %q, want 503", r.StatusCode, body)
	}
	// An upgrade to an HTTP/2 cluster whose host refuses the connection:
	// 503, as for any request.
	c = dialRaw(t, p.addr)
	c.send(upgradeRequest("/x"))
	if r, body := c.response("GET"); r.StatusCode != 503 || !strings.Contains(body, "connection") {
		t.Errorf("upgrade to a closed HTTP/2 cluster: %d %q, want 503", r.StatusCode, body)
	}
	eventually(t, "no active upgrade", func() bool { return p.gauge("http.test.downstream_cx_upgrades_active") == 0 })
}

func TestPostTunnel(t *testing.T) {
	echoAddr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(c, r) })
	post := clusterRoute("/tcp", "ws", func(a *routev3.RouteAction) {
		a.UpgradeConfigs = []*routev3.RouteAction_UpgradeConfig{{
			UpgradeType: "CONNECT", ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{AllowPost: true},
		}}
	})
	p := upgradeProxy(t, echoAddr, nil, post)
	for name, req := range map[string]string{
		"length":  "POST /tcp HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world",
		"chunked": "POST /tcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
	} {
		c := dialRaw(t, p.addr)
		c.send(req)
		r, body := c.response("POST")
		if r.StatusCode != 200 || body != "hello world" {
			t.Errorf("%s: %d %q, want 200 and the body echoed by the TCP upstream", name, r.StatusCode, body)
		}
	}
	// A GET on the route is proxied as HTTP (the echo returns it raw,
	// which is no valid response).
	c := dialRaw(t, p.addr)
	c.send("GET /tcp HTTP/1.1\r\nHost: x\r\n\r\n")
	if r, _ := c.response("GET"); r.StatusCode == 200 {
		t.Error("GET was tunnelled")
	}
}
