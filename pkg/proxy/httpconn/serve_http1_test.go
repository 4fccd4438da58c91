package httpconn

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// directProxy serves /d (200 "hi") and /post (201 "done") directly.
func directProxy(t *testing.T, edit func(*hcmv3.HttpConnectionManager)) *proxy {
	t.Helper()
	cfg := hcm(routeConfig(directRoute("/d", 200, "hi"), directRoute("/post", 201, "done")))
	if edit != nil {
		edit(cfg)
	}
	return startProxy(t, cfg, Deps{})
}

func TestMalformedRequests(t *testing.T) {
	tests := map[string]struct {
		edit   func(*hcmv3.HttpConnectionManager)
		raw    string
		status int
	}{
		"garbage request line":    {raw: "HELLO\r\n\r\n", status: 400},
		"missing host":            {raw: "GET /d HTTP/1.1\r\n\r\n", status: 400},
		"obs-fold":                {raw: "GET /d HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", status: 400},
		"length and chunked":      {raw: "POST /d HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400},
		"unknown transfer coding": {raw: "POST /d HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501},
		"http/2.0 request line":   {raw: "GET /d HTTP/2.0\r\nHost: h\r\n\r\n", status: 505},
		"http/1.0 refused":        {raw: "GET /d HTTP/1.0\r\n\r\n", status: 426},
		"head too large": {
			edit:   func(c *hcmv3.HttpConnectionManager) { c.MaxRequestHeadersKb = wrapperspb.UInt32(1) },
			raw:    "GET /d HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", 2000) + "\r\n\r\n",
			status: 431,
		},
		"too many headers": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxHeadersCount: wrapperspb.UInt32(3)}
			},
			raw:    "GET /d HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
			status: 431,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Each waits for the proxy's delayed close (the client
			// does not close): in parallel, that costs one wait.
			t.Parallel()
			p := directProxy(t, tc.edit)
			c := dialRaw(t, p.addr)
			c.send(tc.raw)
			resp, body := c.response("GET")
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			if !resp.Close || !c.closed() {
				t.Error("the connection stays open after a malformed request")
			}
			if want := strings.SplitN(resp.Status, " ", 2)[1]; body != want {
				t.Errorf("body = %q, want the reason phrase %q", body, want)
			}
			p.waitCounter(t, "http.test.downstream_cx_protocol_error", 1)
		})
	}
}

func TestHTTP10(t *testing.T) {
	p := directProxy(t, func(c *hcmv3.HttpConnectionManager) {
		c.HttpProtocolOptions = &corev3.Http1ProtocolOptions{AcceptHttp_10: true, DefaultHostForHttp_10: "default.example"}
	})
	c := dialRaw(t, p.addr)
	c.send("GET /d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp, body := c.response("GET")
	if resp.StatusCode != 200 || body != "hi" || resp.Header.Get("connection") != "keep-alive" {
		t.Fatalf("keep-alive HTTP/1.0: %d %q connection=%q", resp.StatusCode, body, resp.Header.Get("connection"))
	}
	c.send("GET /d HTTP/1.0\r\n\r\n")
	resp, _ = c.response("GET")
	if resp.StatusCode != 200 || !resp.Close || !c.closed() {
		t.Fatalf("plain HTTP/1.0: status %d, close %v; want 200 and the connection closed", resp.StatusCode, resp.Close)
	}
}

// TestUnreadBodyOfLocalReply checks what happens to a request body the
// proxy never reads because it answers itself.
func TestUnreadBodyOfLocalReply(t *testing.T) {
	p := directProxy(t, nil)
	c := dialRaw(t, p.addr)
	// A body that has arrived is skipped: the connection carries on.
	c.send("POST /post HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /d HTTP/1.1\r\nHost: h\r\n\r\n")
	for _, want := range []string{"done", "hi"} {
		resp, body := c.response("GET")
		if body != want || resp.Close {
			t.Fatalf("got %q close=%v, want %q on an open connection", body, resp.Close, want)
		}
	}
	// A body still to come would be read as the next request: close.
	c.send("POST /post HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\nabc")
	resp, _ := c.response("GET")
	if !resp.Close {
		t.Error("the connection stays open with an unread body pending")
	}
}

func TestTimeouts(t *testing.T) {
	short := durationpb.New(80 * time.Millisecond)
	tests := map[string]struct {
		edit    func(*hcmv3.HttpConnectionManager)
		send    string
		status  int // 0: the connection just closes
		body    string
		counter string
	}{
		"request headers timeout": {
			edit:   func(c *hcmv3.HttpConnectionManager) { c.RequestHeadersTimeout = short },
			send:   "GET /d HTTP/1.1\r\nHost:",
			status: 408, body: bodyHeaderTimeout, counter: "http.test.downstream_rq_header_timeout",
		},
		"stream idle timeout on a body": {
			edit:   func(c *hcmv3.HttpConnectionManager) { c.StreamIdleTimeout = short },
			send:   "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nab",
			status: 408, body: bodyStreamTimeout, counter: "http.test.downstream_rq_idle_timeout",
		},
		"request timeout": {
			edit:   func(c *hcmv3.HttpConnectionManager) { c.RequestTimeout = short },
			send:   "GET /d HTTP/1.1\r\nHost: h\r\n",
			status: 408, body: bodyRequestTimeout, counter: "http.test.downstream_rq_timeout",
		},
		"idle timeout": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: short}
			},
			counter: "http.test.downstream_cx_idle_timeout",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The body of "stream idle timeout" goes to an upstream
			// that waits as long as the client does.
			cfg := hcm(routeConfig(directRoute("/d", 200, "hi"), clusterRoute("/x", "x")))
			tc.edit(cfg)
			sink := rawUpstream(t, func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) })
			st := newFakeCluster(stats.NewStore(), "x", false, sink)
			p := startProxy(t, cfg, Deps{Upstreams: fakeUpstreams{"x": st}})
			c := dialRaw(t, p.addr)
			if tc.send != "" {
				c.send(tc.send)
			}
			if tc.status != 0 {
				resp, body := c.response("GET")
				if resp.StatusCode != tc.status || body != tc.body {
					t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
				}
			}
			if !c.closed() {
				t.Fatal("connection still open after the timeout")
			}
			p.waitCounter(t, tc.counter, 1)
		})
	}
}

func TestMaxRequestsPerConnection(t *testing.T) {
	p := directProxy(t, func(c *hcmv3.HttpConnectionManager) {
		c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxRequestsPerConnection: wrapperspb.UInt32(2)}
	})
	c := dialRaw(t, p.addr)
	c.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\nGET /d HTTP/1.1\r\nHost: h\r\n\r\n")
	first, _ := c.response("GET")
	second, _ := c.response("GET")
	if first.Close || !second.Close || !c.closed() {
		t.Errorf("close flags %v, %v: want the second response to close the connection", first.Close, second.Close)
	}
	p.waitCounter(t, "http.test.downstream_cx_max_requests_reached", 1)
}

// TestMalformedRequestBody checks that a chunked body that breaks the
// framing rules gets 400 even though the request already went upstream.
func TestMalformedRequestBody(t *testing.T) {
	p, _, _ := echoProxy(t, nil)
	c := dialRaw(t, p.addr)
	c.send("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n")
	resp, body := c.response("POST")
	if resp.StatusCode != 400 || body != "Bad Request" || !resp.Close {
		t.Fatalf("got %d %q close=%v, want 400 \"Bad Request\" and close", resp.StatusCode, body, resp.Close)
	}
}
