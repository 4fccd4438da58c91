//go:build linux

package httpconn

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// inIdleSet reports whether c waits in its manager's idle set.
func inIdleSet(c *serverConn) bool {
	c.m.idlers.mu.Lock()
	defer c.m.idlers.mu.Unlock()
	return c.inIdleSet
}

// idleSetEmpty reports whether the manager's idle set holds nothing and
// has closed its epoll set.
func idleSetEmpty(m *Manager) bool {
	m.idlers.mu.Lock()
	defer m.idlers.mu.Unlock()
	return m.idlers.count == 0 && m.idlers.p == nil
}

// handlers serves p's manager on a listener of its own, counting the
// HandleConn calls that have not returned.
func handlers(t *testing.T, m *Manager) (addr string, running *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	running = &atomic.Int32{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			running.Add(1)
			go func() {
				defer running.Add(-1)
				m.HandleConn(c)
			}()
		}
	}()
	return ln.Addr().String(), running
}

// TestIdleHTTP1ConnectionLeavesItsGoroutine: a keep-alive connection idle
// for a while moves to the idle set and HandleConn returns; what arrives
// next (a request in pieces, pipelined requests) is served whole by a new
// goroutine, the connection moves again, and its client's close still
// ends it and its stats.
func TestIdleHTTP1ConnectionLeavesItsGoroutine(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, fixedUpstream(t))
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	addr, running := handlers(t, p.m)
	const req = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
	c := dialRaw(t, addr)
	ok := func(n int) {
		t.Helper()
		for range n {
			resp, body := c.response("GET")
			if resp.StatusCode != 200 || body != benchBody {
				t.Fatalf("status %d, body %q", resp.StatusCode, body)
			}
		}
	}
	moved := func(when string) *serverConn {
		t.Helper()
		sc := onlyConn(t, p.m)
		waitFor(t, "in the idle set "+when, func() bool { return inIdleSet(sc) && running.Load() == 0 })
		return sc
	}
	c.send(req)
	ok(1)
	moved("after the first request")
	if got := p.gauge("http.test.downstream_cx_active"); got != 1 {
		t.Errorf("downstream_cx_active = %d in the idle set, want 1", got)
	}
	if got := p.gauge("http.test.downstream_cx_http1_active"); got != 1 {
		t.Errorf("downstream_cx_http1_active = %d in the idle set, want 1", got)
	}
	if n := p.m.ActiveConnections(); n != 1 {
		t.Errorf("ActiveConnections = %d in the idle set, want 1", n)
	}

	c.send(req[:1])
	time.Sleep(20 * time.Millisecond)
	c.send(req[1:])
	ok(1)
	moved("after the split request")
	c.send(req + req + req)
	ok(3)
	moved("after the pipelined requests")
	if got := p.counter("http.test.downstream_rq_2xx"); got != 5 {
		t.Errorf("downstream_rq_2xx = %d, want 5", got)
	}

	_ = c.Close()
	p.waitGauge(t, "http.test.downstream_cx_active", 0)
	p.waitCounter(t, "http.test.downstream_cx_destroy_remote", 1)
	if got := p.gauge("http.test.downstream_cx_http1_active"); got != 0 {
		t.Errorf("downstream_cx_http1_active = %d after the close, want 0", got)
	}
	waitFor(t, "the idle set closed", func() bool { return idleSetEmpty(p.m) })
}

// TestIdleSetTimeouts: a connection in the idle set still ends at its
// idle timeout and at its maximum duration, counted as such, and not
// early.
func TestIdleSetTimeouts(t *testing.T) {
	tests := map[string]struct {
		opts    *corev3.HttpProtocolOptions
		setting time.Duration
		counter string
	}{
		"idle timeout":            {opts: &corev3.HttpProtocolOptions{IdleTimeout: ms(2000)}, setting: 2000 * time.Millisecond, counter: "http.test.downstream_cx_idle_timeout"},
		"max connection duration": {opts: &corev3.HttpProtocolOptions{MaxConnectionDuration: ms(2500)}, setting: 2500 * time.Millisecond, counter: "http.test.downstream_cx_max_duration_reached"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := stats.NewStore()
			cl := newFakeCluster(st, "up", false, fixedUpstream(t))
			cfg := hcm(routeConfig(clusterRoute("/", "up")))
			cfg.CommonHttpProtocolOptions = tc.opts
			cfg.DelayedCloseTimeout = ms(0)
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
			start := time.Now()
			c := dialRaw(t, p.addr)
			c.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
			if resp, _ := c.response("GET"); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			sc := onlyConn(t, p.m)
			waitFor(t, "in the idle set", func() bool { return inIdleSet(sc) || p.counter(tc.counter) > 0 })
			if !inIdleSet(sc) {
				t.Fatal("ended before it moved to the idle set")
			}
			// Both count from the accept (the response came at once).
			if elapsed := c.closedAt().Sub(start); elapsed < tc.setting {
				t.Errorf("closed after %v, before its %v", elapsed, tc.setting)
			}
			p.waitCounter(t, tc.counter, 1)
			p.waitGauge(t, "http.test.downstream_cx_active", 0)
			if got := p.counter("http.test.downstream_cx_destroy_local"); got != 1 {
				t.Errorf("downstream_cx_destroy_local = %d, want 1", got)
			}
		})
	}
}

// TestIdleSetConnectionsCloseOnDrain: Close ends the connections in the
// idle set at once, and Shutdown then finds none left.
func TestIdleSetConnectionsCloseOnDrain(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, fixedUpstream(t))
	cfg := hcm(routeConfig(clusterRoute("/", "up")))
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	var conns []*rawConn
	for range 3 {
		c := dialRaw(t, p.addr)
		c.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
		if resp, _ := c.response("GET"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		conns = append(conns, c)
	}
	waitFor(t, "three connections in the idle set", func() bool {
		p.m.idlers.mu.Lock()
		defer p.m.idlers.mu.Unlock()
		return p.m.idlers.count == 3
	})
	if err := p.m.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		if !c.closed() {
			t.Errorf("connection %d still open after Close", i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := p.m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := p.gauge("http.test.downstream_cx_active"); got != 0 {
		t.Errorf("downstream_cx_active = %d after Shutdown", got)
	}
	if !idleSetEmpty(p.m) {
		t.Error("the idle set still holds connections")
	}
}

// TestIdleSetLeavesHTTP2Alone: a connection that cannot park (here HTTP/2,
// whose read loop owns the socket) never moves to the idle set.
func TestIdleSetLeavesHTTP2Alone(t *testing.T) {
	p := protocolProxy(t, 0, nil)
	cl := h2cClient()
	defer cl.CloseIdleConnections()
	resp, err := cl.Get(p.url("/h1/x"))
	if err != nil {
		t.Fatal(err)
	}
	_ = readAll(t, resp)
	sc := onlyConn(t, p.m)
	time.Sleep(3 * idleSweepEvery)
	if inIdleSet(sc) {
		t.Fatal("an HTTP/2 connection moved to the idle set")
	}
}

// TestReleaseAfterBurst: the memory a burst of moves leaves behind is
// returned once the burst is over (a sweep that finds nothing more to
// move, or moves nothing), only after enough moves, and at most once per
// releaseEvery.
func TestReleaseAfterBurst(t *testing.T) {
	var m Manager
	steps := []struct {
		moved, waiting int
		want           bool
	}{
		{moved: releaseAfterMoves / 2, waiting: 10},
		{moved: releaseAfterMoves / 2, waiting: 10}, // enough, but the burst goes on
		{moved: 5, waiting: 0, want: true},          // over
		{moved: releaseAfterMoves, waiting: 0},      // too soon after
		{moved: 0, waiting: 3},
	}
	for i, s := range steps {
		if got := m.releaseAfterBurst(s.moved, s.waiting); got != s.want {
			t.Fatalf("step %d (moved %d, waiting %d): release %v, want %v", i, s.moved, s.waiting, got, s.want)
		}
	}
	m.lastRelease = time.Now().Add(-releaseEvery)
	if !m.releaseAfterBurst(0, 3) {
		t.Error("no release once releaseEvery passed after enough moves")
	}
	if m.releaseAfterBurst(1, 0) {
		t.Error("a release right after one")
	}
	var few Manager
	if few.releaseAfterBurst(releaseAfterMoves-1, 0) {
		t.Error("a release after fewer than releaseAfterMoves moves")
	}
}

// TestHTTP1BuffersGoBackAfterTheSweep: a keep-alive connection lets its
// read buffer and exchange state go at once after its first request (so
// that connections opened for one request hold none), and from its
// second on keeps them between requests, paying no pool put and get per
// request, until the sweep finds it waiting through a whole period: then
// they go back to the manager's pools and it moves to the idle set, and
// the next request is served as before. The test runs the sweeps itself.
func TestHTTP1BuffersGoBackAfterTheSweep(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, fixedUpstream(t))
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	// No sweep is scheduled but the test's.
	p.m.sweeping.Store(true)
	p.m.sweep.Stop()
	sweep := func() {
		p.m.sweepIdle()
		p.m.sweep.Stop()
	}
	const req = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
	c := dialRaw(t, p.addr)
	ok := func() {
		t.Helper()
		if resp, body := c.response("GET"); resp.StatusCode != 200 || body != benchBody {
			t.Fatalf("status %d, body %q", resp.StatusCode, body)
		}
	}
	waits := func(sc *serverConn) uint64 {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if !sc.waiting {
			return 0
		}
		return uint64(sc.waits)
	}
	c.send(req)
	ok()
	sc := onlyConn(t, p.m)
	waitFor(t, "parked after the first request, without a sweep", func() bool { return parked(sc) })
	first := waits(sc)
	c.send(req)
	ok()
	waitFor(t, "waiting after the second request", func() bool { return waits(sc) > first })
	x := sc.xShared.Load()
	if x == nil {
		t.Fatal("after its second request, the connection let its buffers go before a sweep")
	}
	second := waits(sc)
	c.send(req)
	ok()
	waitFor(t, "waiting after the third request", func() bool { return waits(sc) > second })
	if sc.xShared.Load() != x {
		t.Error("the third request took another exchange state")
	}
	sweep() // notes the wait
	if parked(sc) {
		t.Fatal("the first sweep let the buffers go")
	}
	sweep() // the connection waited through a whole period
	waitFor(t, "the buffers back and the connection in the idle set", func() bool { return parked(sc) && inIdleSet(sc) })
	c.send(req)
	ok()
	p.waitCounter(t, "http.test.downstream_rq_2xx", 4)
}
