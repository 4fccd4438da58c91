package httpconn

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestLocalReplies(t *testing.T) {
	// Upstreams that fail in each of the ways the router answers itself.
	slow := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		time.Sleep(300 * time.Millisecond)
	})
	reset := rawUpstream(t, func(c net.Conn, r *bufio.Reader) { readRequestHead(r) })
	garbage := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.WriteString(c, "HTTP/1.1 2000 What\r\n\r\n")
	})
	st := stats.NewStore()
	ups := fakeUpstreams{
		"slow":    newFakeCluster(st, "slow", false, slow),
		"reset":   newFakeCluster(st, "reset", false, reset),
		"garbage": newFakeCluster(st, "garbage", false, garbage),
		"down":    newFakeCluster(st, "down", false, closedPort(t)),
		"empty":   newFakeCluster(st, "empty", false),
	}
	notFound := clusterRoute("/nc404", "missing")
	notFound.GetRoute().ClusterNotFoundResponseCode = routev3.RouteAction_NOT_FOUND
	cfg := hcm(routeConfig(
		directRoute("/direct", 418, "I'm a teapot\n"),
		directRoute("/direct-empty", 204, ""),
		&routev3.Route{
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/redirect"}},
			Action: &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{
				HostRedirect: "elsewhere.example", ResponseCode: routev3.RedirectAction_FOUND,
			}},
		},
		clusterRoute("/slow", "slow", withTimeout(50*time.Millisecond)),
		clusterRoute("/reset", "reset"),
		clusterRoute("/garbage", "garbage"),
		clusterRoute("/down", "down"),
		clusterRoute("/empty", "empty"),
		notFound,
		clusterRoute("/nc", "missing"),
	))
	cfg.GetRouteConfig().VirtualHosts[0].Domains = []string{"example.com"}
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups})

	tests := map[string]struct {
		path, host string
		status     int
		body       string
		header     map[string]string
		counter    string
	}{
		"no virtual host":   {path: "/direct", host: "other.example", status: 404, counter: "http.test.no_route"},
		"no route":          {path: "/nothing", status: 404, counter: "http.test.no_route"},
		"direct response":   {path: "/direct", status: 418, body: "I'm a teapot\n", header: map[string]string{"content-type": "text/plain"}, counter: "http.test.rq_direct_response"},
		"empty direct":      {path: "/direct-empty", status: 204, header: map[string]string{"content-type": ""}},
		"redirect":          {path: "/redirect", status: 302, header: map[string]string{"location": "http://elsewhere.example/redirect"}, counter: "http.test.rq_redirect"},
		"no cluster":        {path: "/nc", status: 503, counter: "http.test.no_cluster"},
		"no cluster as 404": {path: "/nc404", status: 404},
		"no healthy host":   {path: "/empty", status: 503, body: bodyNoHealthyUpstream},
		"connect failure":   {path: "/down", status: 503, body: bodyConnectFailure, counter: "cluster.down.upstream_rq_503"},
		"upstream timeout":  {path: "/slow", status: 504, body: bodyUpstreamTimeout, counter: "cluster.slow.upstream_rq_timeout"},
		"upstream reset":    {path: "/reset", status: 503, body: bodyTermination},
		"protocol error":    {path: "/garbage", status: 502, body: bodyProtocolError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			host := tc.host
			if host == "" {
				host = "example.com"
			}
			before := uint64(0)
			if tc.counter != "" {
				before = p.counter(tc.counter)
			}
			status, hdr, body := do(t, client(), "GET", p.url(tc.path), nil, map[string]string{"Host": host})
			if status != tc.status || body != tc.body {
				t.Errorf("got %d %q, want %d %q", status, body, tc.status, tc.body)
			}
			if hdr.Get("server") != ServerName || hdr.Get("date") == "" {
				t.Errorf("local reply lacks server or date: %v", hdr)
			}
			if tc.body != "" && hdr.Get("content-type") != "text/plain" {
				t.Errorf("content-type = %q, want text/plain", hdr.Get("content-type"))
			}
			for k, v := range tc.header {
				if got := hdr.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tc.counter != "" {
				p.waitCounter(t, tc.counter, before+1)
			}
		})
	}
}

// TestStaleUpstreamConnectionIsRetried checks that a pooled connection the
// upstream closed while idle costs the client nothing.
func TestStaleUpstreamConnectionIsRetried(t *testing.T) {
	// Answers one request per connection but keeps the connection
	// "alive" in its response, then closes it.
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	st := stats.NewStore()
	cl := newFakeCluster(st, "flaky", false, addr)
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "flaky"))), Deps{Stats: st, Upstreams: fakeUpstreams{"flaky": cl}})
	c := dialRaw(t, p.addr)
	for i := range 3 {
		c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		resp, body := c.response("GET")
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
}

// TestResponseCutShort checks that a response whose upstream body breaks
// off reaches the client as a broken message, not a complete one.
func TestResponseCutShort(t *testing.T) {
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
	})
	st := stats.NewStore()
	cl := newFakeCluster(st, "short", false, addr)
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "short"))), Deps{Stats: st, Upstreams: fakeUpstreams{"short": cl}})
	resp, err := client().Get(p.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("a truncated response body read as complete")
	}
	p.waitCounter(t, "http.test.rq_reset_after_downstream_response_started", 1)
}

func TestNoUpstreams(t *testing.T) {
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "any"))), Deps{})
	status, _, _ := do(t, client(), "GET", p.url("/"), nil, nil)
	if status != 503 {
		t.Errorf("status = %d without Upstreams, want 503", status)
	}
	p.waitCounter(t, "http.test.no_cluster", 1)
}
