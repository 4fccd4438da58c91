package httpconn

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// continueProxy runs a proxy with proxy_100_continue set as given, routing
// everything to an HTTP/1.1 upstream at addr.
func continueProxy(t *testing.T, proxy100 bool, addr string) *proxy {
	t.Helper()
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, addr)
	c := hcm(routeConfig(clusterRoute("/", "up")))
	c.Proxy_100Continue = proxy100
	return startProxy(t, c, Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
}

// expectHandler answers with the Expect header it saw and the body it read,
// which makes Go's server send 100 Continue first.
func expectHandler(sawExpect *atomic.Value) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sawExpect.Store(r.Header.Get("Expect"))
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "got "+string(body))
	}
}

func TestProxy100ContinueRelaysUpstreamContinue(t *testing.T) {
	var sawExpect atomic.Value
	up := httptest.NewServer(expectHandler(&sawExpect))
	t.Cleanup(up.Close)
	p := continueProxy(t, true, hostOf(up))

	c := dialRaw(t, p.addr)
	c.send("PUT /x HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	// No body yet: the 100 can only be the upstream's, relayed.
	resp, _ := c.response("PUT")
	if resp.StatusCode != 100 {
		t.Fatalf("first response = %d, want 100", resp.StatusCode)
	}
	c.send("body")
	resp, body := c.response("PUT")
	if resp.StatusCode != 200 || body != "got body" {
		t.Fatalf("final response = %d %q", resp.StatusCode, body)
	}
	if got := sawExpect.Load(); got != "100-continue" {
		t.Errorf("upstream saw Expect %q, want 100-continue", got)
	}
	// The connection carries another request.
	c.send("GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if resp, _ := c.response("GET"); resp.StatusCode != 200 {
		t.Fatalf("second request: %d", resp.StatusCode)
	}
	p.waitCounter(t, "http.test.downstream_rq_1xx", 1)
	p.waitCounter(t, "http.test.downstream_rq_2xx", 2)
	// The 100 counts as a response of its own, as in Envoy.
	p.waitCounter(t, "http.test.downstream_rq_completed", 3)
	p.waitCounter(t, "cluster.up.upstream_rq_100", 1)
	p.waitCounter(t, "cluster.up.upstream_rq_1xx", 1)
}

func TestProxy100ContinueEarlyFinalResponse(t *testing.T) {
	// An upstream that refuses the request from its head, and then reads
	// what else comes until the proxy closes the connection.
	after := make(chan int, 1)
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.WriteString(c, "HTTP/1.1 417 Expectation Failed\r\ncontent-length: 2\r\n\r\nno")
		n, _ := io.Copy(io.Discard, r)
		after <- int(n)
	})
	p := continueProxy(t, true, addr)

	c := dialRaw(t, p.addr)
	c.send("PUT /x HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	resp, body := c.response("PUT")
	if resp.StatusCode != 417 || body != "no" {
		t.Fatalf("response = %d %q, want the upstream's 417", resp.StatusCode, body)
	}
	if !resp.Close {
		t.Errorf("the response to a request whose body was never read does not close the connection")
	}
	if !c.closed() {
		t.Errorf("the connection stays open with the body unread")
	}
	// The upstream connection is closed, not reused, and got no body.
	if n := <-after; n != 0 {
		t.Errorf("the upstream got %d more bytes after the head, want none", n)
	}
	p.waitCounter(t, "cluster.up.upstream_rq_417", 1)
	if n := p.counter("cluster.up.upstream_rq_100"); n != 0 {
		t.Errorf("upstream_rq_100 = %d, want 0", n)
	}
	if n := p.counter("http.test.downstream_rq_1xx"); n != 0 {
		t.Errorf("downstream_rq_1xx = %d, want 0", n)
	}
}

func TestProxy100ContinueUpstreamWithoutContinue(t *testing.T) {
	// An upstream that never sends 100: the client sends its body without
	// waiting, and the body still flows.
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		head := readRequestHead(r)
		if !strings.Contains(strings.ToLower(head), "expect: 100-continue") {
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
			return
		}
		body := make([]byte, 4)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\ngot "+string(body))
	})
	p := continueProxy(t, true, addr)

	c := dialRaw(t, p.addr)
	c.send("PUT /x HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody")
	resp, body := c.response("PUT")
	if resp.StatusCode != 200 || body != "got body" {
		t.Fatalf("response = %d %q", resp.StatusCode, body)
	}
	if n := p.counter("http.test.downstream_rq_1xx"); n != 0 {
		t.Errorf("downstream_rq_1xx = %d, want 0", n)
	}
}

func TestProxy100ContinueNobodyMoves(t *testing.T) {
	// The upstream never answers and the client waits for a 100 that
	// never comes: the stream idle timeout ends the wait, with 408 as the
	// request is incomplete (the route timeout starts only once it is).
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.Copy(io.Discard, r)
	})
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, addr)
	c := hcm(routeConfig(clusterRoute("/", "up")))
	c.Proxy_100Continue = true
	c.StreamIdleTimeout = durationpb.New(300 * time.Millisecond)
	p := startProxy(t, c, Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})

	rc := dialRaw(t, p.addr)
	rc.send("PUT /x HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	resp, body := rc.response("PUT")
	if resp.StatusCode != 408 || body != bodyStreamTimeout {
		t.Fatalf("response = %d %q, want 408 %q", resp.StatusCode, body, bodyStreamTimeout)
	}
	p.waitCounter(t, "http.test.downstream_rq_idle_timeout", 1)
}

func TestProxy100ContinueHTTP2Client(t *testing.T) {
	var sawExpect atomic.Value
	up := httptest.NewServer(expectHandler(&sawExpect))
	t.Cleanup(up.Close)
	p := continueProxy(t, true, hostOf(up))

	cl := h2cClient()
	cl.Transport.(*http.Transport).ExpectContinueTimeout = testTimeout
	var interim atomic.Int32
	req, err := http.NewRequest("PUT", p.url("/x"), strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Expect", "100-continue")
	req = req.WithContext(withGot1xx(req.Context(), &interim))
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "got body" {
		t.Fatalf("response = %d %q", resp.StatusCode, b)
	}
	if interim.Load() != 100 {
		t.Errorf("interim response = %d, want 100", interim.Load())
	}
	if got := sawExpect.Load(); got != "100-continue" {
		t.Errorf("upstream saw Expect %q, want 100-continue", got)
	}
	p.waitCounter(t, "cluster.up.upstream_rq_100", 1)
	p.waitCounter(t, "http.test.downstream_rq_1xx", 1)
}

func TestProxy100ContinueOffAnswersLocally(t *testing.T) {
	var sawExpect atomic.Value
	up := httptest.NewServer(expectHandler(&sawExpect))
	t.Cleanup(up.Close)
	p := continueProxy(t, false, hostOf(up))

	c := dialRaw(t, p.addr)
	c.send("PUT /x HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	if resp, _ := c.response("PUT"); resp.StatusCode != 100 {
		t.Fatalf("first response = %d, want 100", resp.StatusCode)
	}
	c.send("body")
	resp, body := c.response("PUT")
	if resp.StatusCode != 200 || body != "got body" {
		t.Fatalf("final response = %d %q", resp.StatusCode, body)
	}
	if got := sawExpect.Load(); got != "" {
		t.Errorf("upstream saw Expect %q, want none", got)
	}
	// Counted as Envoy counts the 100 it sends itself.
	p.waitCounter(t, "http.test.downstream_rq_1xx", 1)
	if n := p.counter("cluster.up.upstream_rq_1xx"); n != 0 {
		t.Errorf("upstream_rq_1xx = %d, want 0", n)
	}
}

// withGot1xx records the last interim status a client gets in ctx.
func withGot1xx(ctx context.Context, got *atomic.Int32) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
			got.Store(int32(code))
			return nil
		},
	})
}
