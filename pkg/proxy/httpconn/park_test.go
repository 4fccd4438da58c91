package httpconn

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// onlyConn returns the manager's one connection, waiting for it.
func onlyConn(t *testing.T, m *Manager) *serverConn {
	t.Helper()
	var c *serverConn
	waitFor(t, "the connection", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for sc := range m.conns {
			c = sc
		}
		return len(m.conns) == 1
	})
	return c
}

// waitFor polls cond until it holds, failing the test after testTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, testTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// parked reports whether an HTTP/1 connection gave its exchange state
// (and, before it, its read buffer) back.
func parked(c *serverConn) bool {
	return c.xShared.Load() == nil
}

// TestIdleHTTP1ConnectionParks: a keep-alive connection waiting for its
// next request comes to hold neither its read buffer nor its exchange
// state (at once, or once the idle sweep found it waiting), and what arrives
// after (a request, a request in pieces, pipelined requests) is served
// and counted whole.
func TestIdleHTTP1ConnectionParks(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, fixedUpstream(t))
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	const req = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
	nc, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(testTimeout))
	br := bufio.NewReader(nc)
	read := func(n int) {
		t.Helper()
		for range n {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != benchBody {
				t.Fatalf("status %d, body %q", resp.StatusCode, body)
			}
		}
	}
	sent := 0
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(nc, s); err != nil {
			t.Fatal(err)
		}
		sent += len(s)
	}
	send(req)
	read(1)
	c := onlyConn(t, p.m)
	waitFor(t, "parked after the first request", func() bool { return parked(c) })

	// A request whose first byte arrives alone: the connection wakes
	// for one byte, and reads the rest as it serves the request.
	send(req[:1])
	time.Sleep(20 * time.Millisecond)
	send(req[1:])
	read(1)
	waitFor(t, "parked after the split request", func() bool { return parked(c) })

	// Pipelined requests arrive together: the second is served from
	// the read buffer, without parking in between.
	send(req + req + req)
	read(3)
	waitFor(t, "parked after the pipelined requests", func() bool { return parked(c) })

	if got := p.counter("http.test.downstream_rq_2xx"); got != 5 {
		t.Errorf("downstream_rq_2xx = %d, want 5", got)
	}
	if got := p.counter("http.test.downstream_cx_rx_bytes_total"); got != uint64(sent) {
		t.Errorf("downstream_cx_rx_bytes_total = %d, want %d", got, sent)
	}
}

// TestParkedHTTP1ConnectionEnds: a parked connection still ends when its
// client closes it.
func TestParkedHTTP1ConnectionEnds(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, fixedUpstream(t))
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	bc := newBenchClient(t, p.addr, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	bc.roundTrip(t)
	c := onlyConn(t, p.m)
	waitFor(t, "parked", func() bool { return parked(c) })
	_ = bc.c.Close()
	waitFor(t, "the connection's end", func() bool { return p.gauge("http.test.downstream_cx_active") == 0 })
	if got := p.counter("http.test.downstream_cx_destroy_remote"); got != 1 {
		t.Errorf("downstream_cx_destroy_remote = %d, want 1", got)
	}
}

// TestIdleHTTP2ConnectionSendsWorkersAway: once an HTTP/2 connection had
// no stream for workerLinger, no stream goroutine waits on it; the next
// stream gets a new one.
func TestIdleHTTP2ConnectionSendsWorkersAway(t *testing.T) {
	p := protocolProxy(t, 0, nil)
	cl := h2cClient()
	defer cl.CloseIdleConnections()
	get := func() {
		t.Helper()
		resp, err := cl.Get(p.url("/h1/x"))
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != 200 || !strings.HasPrefix(body, "GET /up/x") {
			t.Fatalf("status %d, body %q", resp.StatusCode, body)
		}
	}
	get()
	c := onlyConn(t, p.m)
	c.mu.Lock()
	h := c.h2
	c.mu.Unlock()
	if h == nil {
		t.Fatal("not an HTTP/2 connection")
	}
	waitFor(t, "no waiting stream goroutine", func() bool {
		h.workers.mu.Lock()
		defer h.workers.mu.Unlock()
		return !h.workers.armed && h.workers.waiting.Load() == 0
	})
	get()
}
