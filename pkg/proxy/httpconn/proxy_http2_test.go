package httpconn

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// earlyUpstream speaks h2c: /early answers 403 at once without reading the
// request body; any other path echoes the body it read whole. seen lists
// the paths and bodies the echo got.
type earlyUpstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newEarlyUpstream(t *testing.T) *earlyUpstream {
	t.Helper()
	u := &earlyUpstream{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/early" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, "denied")
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		u.mu.Lock()
		u.seen = append(u.seen, r.URL.Path+" "+string(b))
		u.mu.Unlock()
		_, _ = w.Write(b)
	}))
	u.srv.Config.Protocols = new(http.Protocols)
	u.srv.Config.Protocols.SetUnencryptedHTTP2(true)
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

// received is what the echo got, in order.
func (u *earlyUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// An HTTP/2 upstream answers before the request body has arrived, while
// its transport's goroutine waits for the body's next bytes: as Envoy
// does, the HTTP/1 connection ends after the response (Connection:
// close), and the stream takes the connection's reader back before it
// goes, so that the transport reads nothing more of it (under -race, no
// race on the connection's buffers), and the rest of the body and the
// next request never reach the upstream.
func TestHTTP2UpstreamEarlyResponseHTTP1Client(t *testing.T) {
	up := newEarlyUpstream(t)
	st := stats.NewStore()
	fc := newFakeCluster(st, "h2", true, hostOf(up.srv))
	t.Cleanup(fc.closeIdle)
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "h2"))), Deps{Stats: st, Upstreams: fakeUpstreams{"h2": fc}})
	for i := range 3 {
		c := dialRaw(t, p.addr)
		c.send("POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
		resp, body := c.response("POST")
		if resp.StatusCode != 403 || body != "denied" || !resp.Close {
			t.Fatalf("round %d: got %d %q close=%v, want 403 denied with Connection: close", i, resp.StatusCode, body, resp.Close)
		}
		// The rest of the body and a second request: the proxy has
		// ended the connection, so neither is taken for a request.
		_, _ = io.WriteString(c.Conn, "cdefghijPOST /next HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
		if !c.closed() {
			t.Fatalf("round %d: connection still open after an early response to an incomplete request", i)
		}
		// A new connection, which may get the old one's pooled reader,
		// is served as usual.
		c2 := dialRaw(t, p.addr)
		c2.send("POST /next HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nworld")
		resp, body = c2.response("POST")
		if resp.StatusCode != 200 || body != "world" {
			t.Fatalf("round %d: next request got %d %q, want 200 world", i, resp.StatusCode, body)
		}
	}
	got := up.received()
	if strings.Join(got, "|") != "/next world|/next world|/next world" {
		t.Errorf("upstream received %q, want only the three /next world requests", got)
	}
}

// The same over HTTP/2: the early response ends the client's stream (a
// reset, NO_ERROR, since its body is still coming), and the next stream of
// the connection is served as usual, its body untouched by the first
// stream's transport.
func TestHTTP2UpstreamEarlyResponseHTTP2Client(t *testing.T) {
	up := newEarlyUpstream(t)
	st := stats.NewStore()
	fc := newFakeCluster(st, "h2", true, hostOf(up.srv))
	t.Cleanup(fc.closeIdle)
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "h2"))), Deps{Stats: st, Upstreams: fakeUpstreams{"h2": fc}})
	c := h2cClient()
	defer c.CloseIdleConnections()
	for i := range 3 {
		pr, pw := io.Pipe()
		go func() { _, _ = io.WriteString(pw, "ab") }()
		status, _, body := do(t, c, "POST", p.url("/early"), pr, nil)
		if status != 403 || body != "denied" {
			t.Fatalf("round %d: got %d %q, want 403 denied", i, status, body)
		}
		_ = pw.Close()
		status, _, body = do(t, c, "POST", p.url("/next"), strings.NewReader("world"), nil)
		if status != 200 || body != "world" {
			t.Fatalf("round %d: next request got %d %q, want 200 world", i, status, body)
		}
	}
	got := up.received()
	if strings.Join(got, "|") != "/next world|/next world|/next world" {
		t.Errorf("upstream received %q, want only the three /next world requests", got)
	}
}
