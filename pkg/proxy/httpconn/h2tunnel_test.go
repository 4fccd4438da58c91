package httpconn

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// h2UpgradeProxy runs a proxy with allow_connect as given, WebSocket and
// CONNECT upgrades enabled, CONNECT terminated to echoAddr and other
// requests routed to wsAddr.
func h2UpgradeProxy(t *testing.T, allowConnect bool, wsAddr, echoAddr string) *proxy {
	t.Helper()
	st := stats.NewStore()
	connectRoute := &routev3.Route{
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "echo"},
			UpgradeConfigs: []*routev3.RouteAction_UpgradeConfig{{
				UpgradeType: "CONNECT", ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{},
			}},
		}},
	}
	cfg := hcm(routeConfig(connectRoute, clusterRoute("/", "ws")))
	cfg.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}
	cfg.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{AllowConnect: allowConnect}
	return startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{
		"ws":   newFakeCluster(st, "ws", false, wsAddr),
		"echo": newFakeCluster(st, "echo", false, echoAddr),
	}})
}

func TestHTTP2ExtendedConnect(t *testing.T) {
	heads := make(chan string, 2)
	wsAddr := switchingUpstream(t, heads)
	echoAddr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(c, r) })
	p := h2UpgradeProxy(t, true, wsAddr, echoAddr)
	c := dialH2(t, p.addr)
	if v := c.serverSettings[settingEnableConnectProtocol]; v != 1 {
		t.Fatalf("SETTINGS_ENABLE_CONNECT_PROTOCOL = %d, want 1", v)
	}

	// A WebSocket over HTTP/2 reaches the HTTP/1.1 upstream as an Upgrade
	// and its 101 comes back as a 200.
	id := c.open(false, ":method", "CONNECT", ":protocol", "websocket", ":scheme", "http", ":authority", "example.com", ":path", "/chat",
		"sec-websocket-version", "13")
	r := c.resp(id)
	c.until("the response head", func() bool { return r.headers != nil || r.done() })
	if r.status() != "200" || r.done() {
		t.Fatalf("status %q, done %v; want 200 with the stream open\nframes: %s", r.status(), r.done(), c.traceString())
	}
	head := <-heads
	for _, want := range []string{"GET /chat HTTP/1.1\r\n", "\r\nconnection: upgrade\r\n", "\r\nupgrade: websocket\r\n", "\r\nsec-websocket-version: 13\r\n"} {
		if !strings.Contains(head, want) {
			t.Errorf("upstream head lacks %q:\n%s", want, head)
		}
	}
	c.sendData(id, []byte("hello"), false)
	c.until("the echo", func() bool { return r.body.String() == "HELLO" || r.done() })
	if r.body.String() != "HELLO" {
		t.Fatalf("echo %q", r.body.String())
	}
	// The client ends its stream: the upstream sees the end, closes, and
	// the stream ends.
	c.sendData(id, nil, true)
	c.until("the end of the stream", r.done)
	if r.reset {
		t.Errorf("stream reset (%v), want END_STREAM", r.resetCode)
	}

	// A CONNECT terminated at the proxy, on the same connection.
	id = c.open(false, ":method", "CONNECT", ":authority", "target.example:443")
	r = c.resp(id)
	c.until("the CONNECT answer", func() bool { return r.headers != nil || r.done() })
	if r.status() != "200" {
		t.Fatalf("CONNECT status %q\nframes: %s", r.status(), c.traceString())
	}
	c.sendData(id, []byte("ping"), false)
	c.until("the echo", func() bool { return r.body.String() == "ping" || r.done() })
	if r.body.String() != "ping" {
		t.Fatalf("CONNECT echo %q", r.body.String())
	}
	p.waitCounter(t, "http.test.downstream_cx_upgrades_total", 2)
}

func TestHTTP2ExtendedConnectNotAllowed(t *testing.T) {
	heads := make(chan string, 1)
	p := h2UpgradeProxy(t, false, switchingUpstream(t, heads), "127.0.0.1:1")
	c := dialH2(t, p.addr)
	if _, ok := c.serverSettings[settingEnableConnectProtocol]; ok {
		t.Fatal("SETTINGS_ENABLE_CONNECT_PROTOCOL announced without allow_connect")
	}
	c.open(false, ":method", "CONNECT", ":protocol", "websocket", ":scheme", "http", ":authority", "example.com", ":path", "/chat")
	// Malformed without allow_connect: by default the connection ends
	// (as for any malformed request).
	if err := c.waitClosed(); err == nil {
		t.Fatal("connection still open")
	}
	if len(heads) != 0 {
		t.Error("the request reached the upstream")
	}
}

func TestHTTP2PostTunnel(t *testing.T) {
	echoAddr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(c, r) })
	post := clusterRoute("/tcp", "ws", func(a *routev3.RouteAction) {
		a.UpgradeConfigs = []*routev3.RouteAction_UpgradeConfig{{
			UpgradeType: "CONNECT", ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{AllowPost: true},
		}}
	})
	p := upgradeProxy(t, echoAddr, nil, post)
	c := dialH2(t, p.addr)
	id := c.open(false, requestHead("POST", "/tcp")...)
	r := c.resp(id)
	c.until("the response head", func() bool { return r.headers != nil || r.done() })
	if r.status() != "200" || r.done() {
		t.Fatalf("status %q done %v", r.status(), r.done())
	}
	c.sendData(id, []byte("first"), false)
	c.until("the echo", func() bool { return r.body.String() == "first" || r.done() })
	c.sendData(id, []byte(" last"), true)
	c.until("the end", r.done)
	if r.reset || r.body.String() != "first last" {
		t.Errorf("body %q reset %v, want the echo and END_STREAM", r.body.String(), r.reset)
	}
}
