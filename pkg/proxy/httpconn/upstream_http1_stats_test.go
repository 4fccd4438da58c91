package httpconn

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestUpstreamHTTP1ConnStats: the cluster counts a response announcing
// the connection's close in upstream_cx_close_notify (connection: close,
// HTTP/1.0 without keep-alive) and a response that does not parse, head
// or body, in upstream_cx_protocol_error; a kept-alive response counts in
// neither.
func TestUpstreamHTTP1ConnStats(t *testing.T) {
	answers := map[string]string{
		"/keep":   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/close":  "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"/http10": "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/head":   "HTTP/1.1 2OO NOT A STATUS\r\n\r\n",
		"/chunk":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot a chunk\r\n",
	}
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		head := readRequestHead(r)
		for path, answer := range answers {
			if len(head) > 5+len(path) && head[4:4+len(path)+1] == path+" " {
				_, _ = io.WriteString(c, answer)
				return
			}
		}
	})
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, addr)
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	steps := []struct {
		path                  string
		status                int
		closeNotify, protoErr uint64
	}{
		{"/keep", 200, 0, 0},
		{"/close", 200, 1, 0},
		{"/http10", 200, 2, 0},
		{"/head", 502, 2, 1},
		// The head went out before the body broke: the client sees a
		// reset, whatever its status.
		{"/chunk", 0, 2, 2},
	}
	for _, s := range steps {
		if s.status == 0 {
			if resp, err := client().Get(p.url(s.path)); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		} else if status, _, _ := do(t, client(), "GET", p.url(s.path), nil, nil); status != s.status {
			t.Fatalf("%s: status %d, want %d", s.path, status, s.status)
		}
		p.waitCounter(t, "cluster.up.upstream_cx_close_notify", s.closeNotify)
		p.waitCounter(t, "cluster.up.upstream_cx_protocol_error", s.protoErr)
	}
}
