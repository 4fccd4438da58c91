package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// upstreamServer is a loopback HTTP/1.1 server whose connections the
// tests can count and steer.
type upstreamServer struct {
	ln       net.Listener
	accepted atomic.Int32
	// afterResponse runs after each response on the server's side of the
	// connection; returning false closes the connection.
	afterResponse func(c net.Conn) bool
	closed        chan struct{} // receives after the server closed a connection
	wg            sync.WaitGroup

	mu      sync.Mutex
	settled chan struct{} // closed when settle's barrier connection is accepted
}

func newUpstreamServer(t testing.TB, afterResponse func(net.Conn) bool) *upstreamServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &upstreamServer{ln: ln, afterResponse: afterResponse, closed: make(chan struct{}, 16)}
	s.wg.Go(s.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *upstreamServer) serve() {
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if s.isBarrier(c) {
			_ = c.Close()
			continue
		}
		s.accepted.Add(1)
		conns.Go(func() { s.handle(c) })
	}
}

// handle answers each request with "ok" until the client closes, the
// listener closes or afterResponse says stop.
func (s *upstreamServer) handle(c net.Conn) {
	defer func() {
		_ = c.Close()
		s.closed <- struct{}{}
	}()
	r := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
		if s.afterResponse != nil && !s.afterResponse(c) {
			return
		}
	}
}

// barrierIP is the source address of settle's connection: the pools dial
// from 127.0.0.1, so a connection from here is the barrier and no other.
var barrierIP = net.IPv4(127, 0, 0, 2)

// isBarrier reports whether c is settle's connection, and if so tells
// settle it has arrived.
func (s *upstreamServer) isBarrier(c net.Conn) bool {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); !ok || !a.IP.Equal(barrierIP) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled != nil {
		close(s.settled)
		s.settled = nil
	}
	return true
}

// settle returns the number of connections accepted so far. A client's
// dial completes before the server's Accept returns, so the count can lag;
// settle dials one more connection, from barrierIP, and waits until the
// server has taken it: the listener hands connections out in arrival
// order, so every earlier one has been counted by then. The barrier itself
// is not counted.
func (s *upstreamServer) settle(t testing.TB) int32 {
	t.Helper()
	done := make(chan struct{})
	s.mu.Lock()
	s.settled = done
	s.mu.Unlock()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: barrierIP}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatalf("barrier dial: %v", err)
	}
	defer c.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream did not accept the barrier connection within 5 s")
	}
	return s.accepted.Load()
}

func (s *upstreamServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// clusterFor is the YAML of one HTTP/1.1 cluster "up" with one host per
// port; extra is appended to the cluster.
func clusterFor(extra string, ports ...int) string {
	y := "- name: up\n  connect_timeout: 2s\n" + extra + "  load_assignment:\n    cluster_name: up\n    endpoints:\n    - lb_endpoints:\n"
	for _, p := range ports {
		y += fmt.Sprintf("      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}\n", p)
	}
	return y
}

// roundTrip sends one GET on conn and reads the answer, which must be
// "ok".
func roundTrip(t *testing.T, conn *upstream.Conn) {
	t.Helper()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: up\r\n\r\n"); err != nil {
		t.Fatalf("write request: %v", err)
	}
	resp, err := http.ReadResponse(conn.R, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "ok" {
		t.Fatalf("body = %q, %v; want ok", body, err)
	}
}

// statValues reads the named counters and gauges of the store.
func statValues(store *stats.Store, counters []string, gauges []string) map[string]int64 {
	out := map[string]int64{}
	for _, n := range counters {
		out[n] = int64(store.Counter(n).Value())
	}
	for _, n := range gauges {
		out[n] = store.Gauge(n).Value()
	}
	return out
}

func TestHTTP1PoolReuse(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	ctx := t.Context()

	first, err := c.AcquireHTTP1(ctx, h)
	if err != nil {
		t.Fatalf("AcquireHTTP1: %v", err)
	}
	roundTrip(t, first)
	c.ReleaseHTTP1(first, true)
	for i := 2; i <= 3; i++ {
		conn, err := c.AcquireHTTP1(ctx, h)
		if err != nil {
			t.Fatalf("AcquireHTTP1 #%d: %v", i, err)
		}
		if conn != first {
			t.Errorf("request %d did not reuse the idle connection", i)
		}
		if conn.Requests != uint32(i) {
			t.Errorf("Requests = %d, want %d", conn.Requests, i)
		}
		roundTrip(t, conn)
		c.ReleaseHTTP1(conn, true)
	}
	if got := srv.accepted.Load(); got != 1 {
		t.Errorf("upstream accepted %d connections, want 1", got)
	}
	got := statValues(store,
		[]string{"cluster.up.upstream_cx_total", "cluster.up.upstream_cx_http1_total", "cluster.up.upstream_cx_destroy"},
		[]string{"cluster.up.upstream_cx_active"})
	want := map[string]int64{"cluster.up.upstream_cx_total": 1, "cluster.up.upstream_cx_http1_total": 1, "cluster.up.upstream_cx_destroy": 0, "cluster.up.upstream_cx_active": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats = %v, want %v", got, want)
	}
	if h.Stats.CxTotal.Load() != 1 || h.Stats.CxActive.Load() != 1 {
		t.Errorf("host cx_total %d cx_active %d, want 1 and 1", h.Stats.CxTotal.Load(), h.Stats.CxActive.Load())
	}
	if !store.Histogram("cluster.up.upstream_cx_connect_ms").Used() {
		t.Error("upstream_cx_connect_ms recorded nothing")
	}

	// Not reusable: closed and counted.
	conn, err := c.AcquireHTTP1(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	c.ReleaseHTTP1(conn, false)
	if store.Counter("cluster.up.upstream_cx_destroy").Value() != 1 || store.Gauge("cluster.up.upstream_cx_active").Value() != 0 || h.Stats.CxActive.Load() != 0 {
		t.Errorf("after a non-reusable release: destroy %d, active %d, host active %d; want 1, 0, 0",
			store.Counter("cluster.up.upstream_cx_destroy").Value(), store.Gauge("cluster.up.upstream_cx_active").Value(), h.Stats.CxActive.Load())
	}
	if !store.Histogram("cluster.up.upstream_cx_length_ms").Used() {
		t.Error("upstream_cx_length_ms recorded nothing")
	}
}

// TestHTTP1PoolConcurrentLoans: connections lent at the same time are
// distinct, and all come back to the idle list.
func TestHTTP1PoolConcurrentLoans(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	var conns []*upstream.Conn
	for range 3 {
		conn := mustAcquire(t, c, h)
		conns = append(conns, conn)
	}
	if conns[0] == conns[1] || conns[1] == conns[2] || conns[0] == conns[2] {
		t.Fatal("one connection was lent twice")
	}
	for _, conn := range conns {
		roundTrip(t, conn)
		c.ReleaseHTTP1(conn, true)
	}
	if n := c.set.Load().h1.get(h).idleCount(); n != 3 {
		t.Errorf("idle connections = %d, want 3", n)
	}
	// LIFO: the last released comes back first.
	conn := mustAcquire(t, c, h)
	if conn != conns[2] {
		t.Error("the most recently released connection was not reused first")
	}
	c.ReleaseHTTP1(conn, true)
}

// TestHTTP1PoolIdleHoldsNoReadBuffer: a connection released to its pool
// gives its read buffer back at once (the buffers held follow the
// responses being read, not the connections kept open), and each loan
// comes with one that reads its responses.
func TestHTTP1PoolIdleHoldsNoReadBuffer(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	first := mustAcquire(t, c, h)
	if first.R == nil {
		t.Fatal("a new connection was lent without a read buffer")
	}
	for i := range 3 {
		conn := first
		if i > 0 {
			conn = mustAcquire(t, c, h)
			if conn != first || conn.R == nil {
				t.Fatalf("loan %d: reused %v, with a read buffer %v; want the idle connection with one", i, conn == first, conn.R != nil)
			}
		}
		roundTrip(t, conn)
		c.ReleaseHTTP1(conn, true)
		idle := c.set.Load().h1.get(h).shares[0].idle
		if len(idle) != 1 || idle[0].up.R != nil {
			t.Fatalf("loan %d: idle connections %d, the first holding a read buffer: %v; want 1, false", i, len(idle), len(idle) == 1 && idle[0].up.R != nil)
		}
	}
	if got := srv.accepted.Load(); got != 1 {
		t.Errorf("upstream accepted %d connections, want 1", got)
	}
}

// TestHTTP1PoolKeepsDeadlines: a deadline the borrower set stays with the
// connection in the idle list (clearing it cost a timer update per
// request), and does not fail the probe at the next loan, even expired:
// the connection is lent again, and carries a request once its borrower
// sets its own deadline, as every borrower does.
func TestHTTP1PoolKeepsDeadlines(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, clock := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	first := mustAcquire(t, c, h)
	roundTrip(t, first)
	if err := first.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	c.ReleaseHTTP1(first, true)
	// Due a probe: the peek must not see the expired deadline.
	clock.t = clock.t.Add(probeWindow)
	second := mustAcquire(t, c, h)
	if second != first {
		t.Fatal("the idle connection was dropped because of an old deadline")
	}
	if _, err := second.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a write before the borrower's own deadline: %v, want the old deadline's expiry", err)
	}
	if err := second.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, second)
	c.ReleaseHTTP1(second, true)
}

func TestHTTP1PoolReleaseTwice(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	conn := mustAcquire(t, c, h)
	c.ReleaseHTTP1(conn, true)
	c.ReleaseHTTP1(conn, true)
	c.ReleaseHTTP1(nil, true)
	if n := c.set.Load().h1.get(h).idleCount(); n != 1 {
		t.Errorf("idle connections = %d, want 1", n)
	}
}

// waitUnusable waits (bounded) until the kernel has delivered the peer's
// close or data to the idle connection, so that the pool's probe sees it.
func waitUnusable(t *testing.T, tc *trackedConn) {
	t.Helper()
	for range 200 {
		if !tc.probe.usable() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the idle connection still looks usable")
}

// TestHTTP1PoolStaleConnections: a connection that the upstream closed or
// wrote to while it was idle is not lent again once it is due a probe
// (TestHTTP1PoolProbeWindow covers the loans that skip it).
func TestHTTP1PoolStaleConnections(t *testing.T) {
	tests := map[string]func(net.Conn) bool{
		"closed by the upstream": func(net.Conn) bool { return false },
		"unsolicited bytes": func(c net.Conn) bool {
			_, _ = io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\n\r\n")
			return true
		},
	}
	for name, after := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newUpstreamServer(t, after)
			m, store, clock := newTestManager(t, clusterFor("", srv.port()))
			c := m.Cluster("up")
			h := c.PickHost(nil)
			first := mustAcquire(t, c, h)
			roundTrip(t, first)
			c.ReleaseHTTP1(first, true)
			if c.set.Load().h1.get(h).idleCount() == 1 {
				waitUnusable(t, c.set.Load().h1.get(h).shares[0].idle[0])
			}
			clock.t = clock.t.Add(probeWindow)
			second := mustAcquire(t, c, h)
			if second == first {
				t.Fatal("a stale connection was reused")
			}
			roundTrip(t, second)
			if got := store.Counter("cluster.up.upstream_cx_total").Value(); got != 2 {
				t.Errorf("upstream_cx_total = %d, want 2", got)
			}
			if got := store.Counter("cluster.up.upstream_cx_destroy").Value(); got != 1 {
				t.Errorf("upstream_cx_destroy = %d, want 1", got)
			}
			c.ReleaseHTTP1(second, true)
		})
	}
}

func TestHTTP1PoolLimits(t *testing.T) {
	tests := map[string]struct {
		extra   string
		advance time.Duration // clock step before the second acquisition
		reused  bool
		counter string
	}{
		"max requests per connection": {
			extra: `  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http_protocol_options: {}}
      common_http_protocol_options: {max_requests_per_connection: 1}
`,
			counter: "cluster.up.upstream_cx_max_requests",
		},
		"idle timeout": {
			extra: `  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http_protocol_options: {}}
      common_http_protocol_options: {idle_timeout: 10s}
`,
			advance: 10 * time.Second,
			counter: "cluster.up.upstream_cx_idle_timeout",
		},
		"within the idle timeout": {
			advance: 59 * time.Minute,
			reused:  true,
			counter: "cluster.up.upstream_cx_idle_timeout",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newUpstreamServer(t, nil)
			m, store, clock := newTestManager(t, clusterFor(tc.extra, srv.port()))
			c := m.Cluster("up")
			h := c.PickHost(nil)
			first := mustAcquire(t, c, h)
			roundTrip(t, first)
			c.ReleaseHTTP1(first, true)
			clock.t = clock.t.Add(tc.advance)
			second := mustAcquire(t, c, h)
			roundTrip(t, second)
			if (second == first) != tc.reused {
				t.Errorf("reused = %v, want %v", second == first, tc.reused)
			}
			want := uint64(1)
			if tc.reused {
				want = 0
			}
			if got := store.Counter(tc.counter).Value(); got != want {
				t.Errorf("%s = %d, want %d", tc.counter, got, want)
			}
			c.ReleaseHTTP1(second, true)
		})
	}
}

func TestConnectFailures(t *testing.T) {
	closedPort := func(t *testing.T) int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		return port
	}
	blockingDial := func(ctx context.Context, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	tests := map[string]struct {
		dial        DialFunc
		cancelled   bool
		wantErr     error
		wantTimeout uint64
		wantFail    uint64
	}{
		"refused by a closed port": {
			wantFail: 1,
		},
		"connect timeout": {
			dial:        blockingDial,
			wantErr:     ErrConnectTimeout,
			wantTimeout: 1,
			wantFail:    1,
		},
		"abandoned by the caller": {
			dial:      blockingDial,
			cancelled: true,
			wantErr:   context.Canceled,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			y := clusterFor("", closedPort(t))
			y = "- name: up\n  connect_timeout: 0.05s\n" + y[len("- name: up\n  connect_timeout: 2s\n"):]
			m, store, _ := newTestManager(t, y, func(o *Options) { o.Dial = tc.dial })
			c := m.Cluster("up")
			h := c.PickHost(nil)
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancelled {
				cancel()
			}
			defer cancel()
			conn, err := c.AcquireHTTP1(ctx, h)
			if err == nil {
				c.ReleaseHTTP1(conn, false)
				t.Fatal("AcquireHTTP1 succeeded")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			var ne net.Error
			if timeout := errors.As(err, &ne) && ne.Timeout(); timeout != (tc.wantTimeout > 0) {
				t.Errorf("error %v: net.Error timeout = %v, want %v", err, timeout, tc.wantTimeout > 0)
			}
			checks := map[string]uint64{
				"cluster.up.upstream_cx_connect_fail":    tc.wantFail,
				"cluster.up.upstream_cx_connect_timeout": tc.wantTimeout,
				"cluster.up.upstream_cx_total":           tc.wantFail,
			}
			for n, want := range checks {
				if got := store.Counter(n).Value(); got != want {
					t.Errorf("%s = %d, want %d", n, got, want)
				}
			}
			if h.Stats.CxConnectFail.Load() != tc.wantFail || h.Stats.CxActive.Load() != 0 {
				t.Errorf("host cx_connect_fail %d cx_active %d, want %d and 0", h.Stats.CxConnectFail.Load(), h.Stats.CxActive.Load(), tc.wantFail)
			}
		})
	}
}

func TestClusterClose(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	lent := mustAcquire(t, c, h)
	idle := mustAcquire(t, c, h)
	c.ReleaseHTTP1(idle, true)
	m.Close()
	if got := store.Gauge("cluster.up.upstream_cx_active").Value(); got != 0 {
		t.Errorf("upstream_cx_active = %d after Close, want 0", got)
	}
	if _, err := lent.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err == nil {
		t.Error("a lent connection still works after Close")
	}
	c.ReleaseHTTP1(lent, true)
	if _, err := c.AcquireHTTP1(t.Context(), h); !errors.Is(err, ErrClosed) {
		t.Errorf("AcquireHTTP1 after Close: %v, want ErrClosed", err)
	}
	if n := c.set.Load().h1.get(h).idleCount(); n != 0 {
		t.Errorf("%d idle connections after Close", n)
	}
	m.Close() // idempotent
}

func TestAcquireWrongHost(t *testing.T) {
	m, _, _ := newTestManager(t, clusterFor("", 1)+`- name: h2
  http2_protocol_options: {}
`)
	stranger := &upstream.Host{Address: "127.0.0.1:1"}
	if _, err := m.Cluster("up").AcquireHTTP1(t.Context(), stranger); err == nil {
		t.Error("AcquireHTTP1 accepted a host of no cluster")
	}
	if _, err := m.Cluster("h2").AcquireHTTP1(t.Context(), stranger); err == nil {
		t.Error("AcquireHTTP1 worked on an HTTP/2 cluster")
	}
	req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	if _, err := m.Cluster("up").RoundTripHTTP2(req, stranger); err == nil {
		t.Error("RoundTripHTTP2 worked on an HTTP/1.1 cluster")
	}
	// A connection that is not the cluster's is closed, not pooled.
	a, b := net.Pipe()
	defer b.Close()
	m.Cluster("up").ReleaseHTTP1(&upstream.Conn{Conn: a}, true)
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("a foreign connection was not closed")
	}
}

// TestIdleReuseDoesNotAllocate: taking an idle connection and giving it
// back costs no allocation, with or without the probe.
func TestIdleReuseDoesNotAllocate(t *testing.T) {
	tests := map[string]time.Duration{ // clock step before each loan
		"lent within the probe window": 0,
		"probed":                       probeWindow,
	}
	for name, step := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newUpstreamServer(t, nil)
			m, _, clock := newTestManager(t, clusterFor("", srv.port()))
			c := m.Cluster("up")
			h := c.PickHost(nil)
			ctx := t.Context()
			conn, err := c.AcquireHTTP1(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			c.ReleaseHTTP1(conn, true)
			allocs := testing.AllocsPerRun(100, func() {
				clock.t = clock.t.Add(step)
				conn, err := c.AcquireHTTP1(ctx, h)
				if err != nil {
					panic(err)
				}
				c.ReleaseHTTP1(conn, true)
			})
			if allocs != 0 {
				t.Errorf("idle acquire and release allocate %v times", allocs)
			}
			if got := srv.settle(t); got != 1 {
				t.Errorf("upstream accepted %d connections, want 1", got)
			}
		})
	}
}

// TestHTTP1PoolIPv6 dials an IPv6 loopback host (skipped where ::1 is not
// configured).
func TestHTTP1PoolIPv6(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := &upstreamServer{ln: ln, closed: make(chan struct{}, 16)}
	srv.wg.Go(srv.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		srv.wg.Wait()
	})
	port := ln.Addr().(*net.TCPAddr).Port
	m, _, _ := newTestManager(t, fmt.Sprintf(`
- name: up
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: "::1", port_value: %d}}}
`, port))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	if want := fmt.Sprintf("[::1]:%d", port); h.Address != want {
		t.Errorf("address %q, want %q", h.Address, want)
	}
	conn := mustAcquire(t, c, h)
	roundTrip(t, conn)
	c.ReleaseHTTP1(conn, true)
}

// TestHTTP1PoolConcurrent runs requests from several goroutines at once:
// no connection is ever lent twice (the upstream would see interleaved
// requests and the answers would not parse), at most one connection per
// goroutine is opened, and all of them end up idle.
func TestHTTP1PoolConcurrent(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				conn, err := c.AcquireHTTP1(t.Context(), h)
				if err != nil {
					errs <- err
					return
				}
				if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: up\r\n\r\n"); err != nil {
					errs <- err
					return
				}
				resp, err := http.ReadResponse(conn.R, nil)
				if err != nil {
					errs <- err
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				c.ReleaseHTTP1(conn, err == nil)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.settle(t); n > workers {
		t.Errorf("upstream accepted %d connections for %d workers", n, workers)
	}
	if active, idle := store.Gauge("cluster.up.upstream_cx_active").Value(), c.set.Load().h1.get(h).idleCount(); active != int64(idle) {
		t.Errorf("upstream_cx_active = %d, idle connections = %d; want them equal", active, idle)
	}
}

// mustAcquire borrows an HTTP/1 connection to h from c, or fails the
// test.
func mustAcquire(t *testing.T, c *Cluster, h *upstream.Host) *upstream.Conn {
	t.Helper()
	conn, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}
