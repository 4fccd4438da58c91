package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// breakerCluster is an HTTP/1.1 cluster "up" with the given DEFAULT
// thresholds (YAML flow fields, e.g. "max_connections: 1").
func breakerCluster(thresholds string, ports ...int) string {
	return clusterFor("  circuit_breakers:\n    thresholds:\n    - {"+thresholds+"}\n", ports...)
}

// breakerGauges are the DEFAULT priority's open gauges and the cluster's
// pending gauge, which all read 0 when nothing is in flight.
var breakerGauges = []string{
	"cluster.up.circuit_breakers.default.cx_open",
	"cluster.up.circuit_breakers.default.rq_pending_open",
	"cluster.up.circuit_breakers.default.rq_open",
	"cluster.up.circuit_breakers.default.rq_retry_open",
	"cluster.up.circuit_breakers.default.cx_pool_open",
	"cluster.up.upstream_rq_pending_active",
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestResourceGauges(t *testing.T) {
	store := stats.NewStore()
	open, remaining := store.Gauge("open"), store.Gauge("remaining")
	r := new(resource)
	r.init(2, nil, 0, 0, open, remaining)
	if remaining.Value() != 2 || open.Value() != 0 {
		t.Fatalf("new: remaining %d open %d, want 2 and 0", remaining.Value(), open.Value())
	}
	if !r.tryAcquire() || open.Value() != 0 || remaining.Value() != 1 {
		t.Fatalf("one taken: open %d remaining %d, want 0 and 1", open.Value(), remaining.Value())
	}
	if !r.tryAcquire() || open.Value() != 1 || remaining.Value() != 0 {
		t.Fatalf("two taken: open %d remaining %d, want 1 and 0", open.Value(), remaining.Value())
	}
	if r.tryAcquire() || r.canAcquire() {
		t.Fatal("a third unit was granted past the limit of 2")
	}
	r.force()
	if open.Value() != 1 || remaining.Value() != 0 || r.count.Load() != 3 {
		t.Fatalf("forced past the limit: open %d remaining %d count %d, want 1, 0, 3", open.Value(), remaining.Value(), r.count.Load())
	}
	r.release()
	r.release()
	if open.Value() != 0 || remaining.Value() != 1 {
		t.Fatalf("back to one: open %d remaining %d, want 0 and 1", open.Value(), remaining.Value())
	}
	// A zero limit refuses everything and reads open once touched.
	z := new(resource)
	z.init(0, nil, 0, 0, store.Gauge("zopen"), nil)
	if z.tryAcquire() {
		t.Fatal("a zero limit granted a unit")
	}
}

// TestThresholdsRuntimeOverride: the runtime keys
// circuit_breakers.<cluster>.<priority>.max_* override the configured
// limits as soon as the runtime changes, and /clusters' Thresholds show
// the limits in force.
func TestThresholdsRuntimeOverride(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		{Name: "admin", LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}}},
	}}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, store, _ := newTestManager(t, breakerCluster("max_requests: 5, track_remaining: true", srv.port()), func(o *Options) { o.Runtime = rt.Snapshot })
	c := m.Cluster("up")
	h := c.PickHost(nil)
	if got := c.Thresholds(corev3.RoutingPriority_DEFAULT).MaxRequests; got != 5 {
		t.Fatalf("max_requests %d, want the configured 5", got)
	}
	if err := rt.Modify(map[string]string{"circuit_breakers.up.default.max_requests": "0", "circuit_breakers.up.high.max_connections": "7"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireHTTP1(t.Context(), h); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("with max_requests 0 from the runtime: %v, want ErrOverflow", err)
	}
	if got := c.Thresholds(corev3.RoutingPriority_HIGH).MaxConnections; got != 7 {
		t.Errorf("HIGH max_connections %d, want the runtime's 7", got)
	}
	if err := rt.Modify(map[string]string{"circuit_breakers.up.default.max_requests": ""}); err != nil {
		t.Fatal(err)
	}
	conn, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatalf("with the override removed: %v", err)
	}
	if n := store.Gauge("cluster.up.circuit_breakers.default.remaining_rq").Value(); n != 4 {
		t.Errorf("remaining_rq = %d, want 4 of the configured 5", n)
	}
	c.ReleaseHTTP1(conn, false)
}

// TestResourceConcurrent: holders racing on one breaker never exceed the
// limit, and the gauges match the count once they are done.
func TestResourceConcurrent(t *testing.T) {
	store := stats.NewStore()
	r := new(resource)
	r.init(3, nil, 0, 0, store.Gauge("open"), store.Gauge("remaining"))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inUse    int
		maxInUse int
	)
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if !r.tryAcquire() {
					continue
				}
				mu.Lock()
				inUse++
				maxInUse = max(maxInUse, inUse)
				inUse--
				mu.Unlock()
				r.release()
			}
		})
	}
	wg.Wait()
	if maxInUse > 3 {
		t.Errorf("%d units held at once, limit 3", maxInUse)
	}
	if r.count.Load() != 0 || store.Gauge("open").Value() != 0 || store.Gauge("remaining").Value() != 3 {
		t.Errorf("after the race: count %d open %d remaining %d, want 0, 0, 3", r.count.Load(), store.Gauge("open").Value(), store.Gauge("remaining").Value())
	}
}

// TestHTTP1BreakersPendingAndOverflow follows Envoy's HTTP/1 pool with
// max_connections 1 and max_pending_requests 1: the first request gets the
// connection, the second waits pending (upstream_cx_overflow), the third
// is refused (upstream_rq_pending_overflow), and the released connection
// goes to the waiting request.
func TestHTTP1BreakersPendingAndOverflow(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, breakerCluster("max_connections: 1, max_pending_requests: 1, track_remaining: true", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)

	first, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(n string) int64 { return store.Gauge("cluster.up." + n).Value() }
	counter := func(n string) uint64 { return store.Counter("cluster.up." + n).Value() }
	if gauge("circuit_breakers.default.cx_open") != 1 || gauge("circuit_breakers.default.remaining_cx") != 0 {
		t.Errorf("one connection of 1: cx_open %d remaining_cx %d, want 1 and 0", gauge("circuit_breakers.default.cx_open"), gauge("circuit_breakers.default.remaining_cx"))
	}

	second := acquireAsync(t, c, h)
	waitFor(t, "the second request to be pending", func() bool { return gauge("upstream_rq_pending_active") == 1 })
	if counter("upstream_cx_overflow") != 1 || gauge("circuit_breakers.default.rq_pending_open") != 1 || gauge("circuit_breakers.default.remaining_pending") != 0 {
		t.Errorf("pending: cx_overflow %d rq_pending_open %d remaining_pending %d, want 1, 1, 0",
			counter("upstream_cx_overflow"), gauge("circuit_breakers.default.rq_pending_open"), gauge("circuit_breakers.default.remaining_pending"))
	}
	if _, err := c.AcquireHTTP1(t.Context(), h); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("third request: %v, want ErrOverflow", err)
	}
	if counter("upstream_rq_pending_overflow") != 1 {
		t.Errorf("upstream_rq_pending_overflow = %d, want 1", counter("upstream_rq_pending_overflow"))
	}

	handOver(t, c, first, second)

	if srv.accepted.Load() != 1 {
		t.Errorf("upstream accepted %d connections, want 1", srv.accepted.Load())
	}
	want := map[string]int64{
		// Both were pending: the first while its connection opened.
		"cluster.up.upstream_rq_pending_total":                  2,
		"cluster.up.upstream_cx_overflow":                       1,
		"cluster.up.upstream_rq_pending_overflow":               1,
		"cluster.up.circuit_breakers.default.remaining_rq":      1024,
		"cluster.up.circuit_breakers.default.remaining_pending": 1,
	}
	for _, g := range breakerGauges {
		want[g] = 0
	}
	// The idle connection still counts against max_connections.
	want["cluster.up.circuit_breakers.default.cx_open"] = 1
	got := statValues(store,
		[]string{"cluster.up.upstream_rq_pending_total", "cluster.up.upstream_cx_overflow", "cluster.up.upstream_rq_pending_overflow"},
		append(slices.Clone(breakerGauges), "cluster.up.circuit_breakers.default.remaining_rq", "cluster.up.circuit_breakers.default.remaining_pending"))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats = %v\nwant     %v", got, want)
	}
}

// TestHTTP1BreakersMaxRequests: past max_requests a request is refused
// at once, counted as Envoy counts it, in upstream_rq_pending_overflow.
func TestHTTP1BreakersMaxRequests(t *testing.T) {
	c, store, h := breakerUp(t, "max_requests: 1")
	first, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if store.Gauge("cluster.up.circuit_breakers.default.rq_open").Value() != 1 {
		t.Error("rq_open is not 1 with max_requests requests in flight")
	}
	if _, err := c.AcquireHTTP1(t.Context(), h); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("second request: %v, want ErrOverflow", err)
	}
	if n := store.Counter("cluster.up.upstream_rq_pending_overflow").Value(); n != 1 {
		t.Errorf("upstream_rq_pending_overflow = %d, want 1", n)
	}
	c.ReleaseHTTP1(first, false)
	c.ReleaseHTTP1(first, false) // a second release gives nothing back twice
	if store.Gauge("cluster.up.circuit_breakers.default.rq_open").Value() != 0 || c.breakers().rq.count.Load() != 0 {
		t.Error("the request was not given back at its release")
	}
	again, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	c.ReleaseHTTP1(again, false)
}

// TestHTTP1BreakersPendingDeadline: a pending request gives up at its
// deadline, and at its context's end, holding nothing afterwards.
func TestHTTP1BreakersPendingDeadline(t *testing.T) {
	c, store, h := breakerUp(t, "max_connections: 1")
	first, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireHTTP1Until(t.Context(), h, time.Now().Add(20*time.Millisecond), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pending past its deadline: %v, want DeadlineExceeded", err)
	}
	// A client seen gone at a poll ends the wait.
	var polls atomic.Int32
	gone := func() bool { return polls.Add(1) >= 2 }
	if _, err := c.AcquireHTTP1Until(t.Context(), h, time.Time{}, gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("pending with its client gone: %v, want Canceled", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.AcquireHTTP1(ctx, h)
		done <- err
	}()
	waitFor(t, "the request to be pending", func() bool { return store.Gauge("cluster.up.upstream_rq_pending_active").Value() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pending request: %v, want Canceled", err)
	}
	if n := store.Gauge("cluster.up.upstream_rq_pending_active").Value(); n != 0 {
		t.Errorf("upstream_rq_pending_active = %d after the waits ended", n)
	}
	if n := store.Counter("cluster.up.upstream_rq_cancelled").Value(); n != 3 {
		t.Errorf("upstream_rq_cancelled = %d, want the 3 abandoned waits", n)
	}
	if n := c.breakers().rq.count.Load(); n != 1 {
		t.Errorf("%d requests counted, want the first one only", n)
	}
	// The waiters left: the released connection goes idle, not to them.
	c.ReleaseHTTP1(first, true)
	again, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil || again != first {
		t.Fatalf("next request got %p, %v; want the idle connection", again, err)
	}
	c.ReleaseHTTP1(again, true)
}

// TestHTTP1PendingFailureEject: a pending request whose connection
// fails to open counts in upstream_rq_pending_failure_eject, and gives
// everything back.
func TestHTTP1PendingFailureEject(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // nothing listens there now: connections are refused
	m, store, _ := newTestManager(t, breakerCluster("max_connections: 1", port))
	c := m.Cluster("up")
	if _, err := c.AcquireHTTP1(t.Context(), c.PickHost(nil)); err == nil {
		t.Fatal("a connection to a closed port succeeded")
	}
	got := statValues(store,
		[]string{"cluster.up.upstream_rq_pending_failure_eject", "cluster.up.upstream_rq_cancelled", "cluster.up.upstream_cx_connect_fail"},
		[]string{"cluster.up.upstream_rq_pending_active", "cluster.up.circuit_breakers.default.cx_open", "cluster.up.circuit_breakers.default.rq_open"})
	want := map[string]int64{"cluster.up.upstream_rq_pending_failure_eject": 1, "cluster.up.upstream_rq_cancelled": 0, "cluster.up.upstream_cx_connect_fail": 1,
		"cluster.up.upstream_rq_pending_active": 0, "cluster.up.circuit_breakers.default.cx_open": 0, "cluster.up.circuit_breakers.default.rq_open": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats = %v\nwant     %v", got, want)
	}
}

// TestHTTP1BreakersCloseWakesWaiter: a request waiting at
// max_connections dials when a connection closes instead of coming back.
func TestHTTP1BreakersCloseWakesWaiter(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, breakerCluster("max_connections: 1", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	first, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		if err == nil {
			if conn == first {
				err = errors.New("got the closed connection")
			}
			c.ReleaseHTTP1(conn, false)
		}
		got <- err
	}()
	waitFor(t, "the request to be pending", func() bool { return store.Gauge("cluster.up.upstream_rq_pending_active").Value() == 1 })
	c.ReleaseHTTP1(first, false)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting request was not woken by the close")
	}
	waitFor(t, "the upstream to accept the second connection", func() bool { return srv.accepted.Load() == 2 })
}

// TestHTTP1BreakersFirstConnectionPerHost: a host without a connection
// gets one even when connections to another host hold max_connections,
// as in Envoy, counted as an overflow.
func TestHTTP1BreakersFirstConnectionPerHost(t *testing.T) {
	a, b := newUpstreamServer(t, nil), newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, breakerCluster("max_connections: 1", a.port(), b.port()))
	c := m.Cluster("up")
	ha, hb := c.PickHost(nil), c.PickHost(nil)
	if ha == hb {
		t.Fatal("round robin picked one host twice")
	}
	ca, err := c.AcquireHTTP1(t.Context(), ha)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := c.AcquireHTTP1(t.Context(), hb)
	if err != nil {
		t.Fatalf("the second host's first connection: %v", err)
	}
	if n := store.Counter("cluster.up.upstream_cx_overflow").Value(); n != 1 {
		t.Errorf("upstream_cx_overflow = %d, want 1", n)
	}
	c.ReleaseHTTP1(ca, false)
	c.ReleaseHTTP1(cb, false)
	if n := c.breakers().cx.count.Load(); n != 0 {
		t.Errorf("%d connections counted after both closed", n)
	}
}

// TestConnectHostOverflow: a plain connection past max_connections is not
// opened, and counts in upstream_cx_overflow.
func TestConnectHostOverflow(t *testing.T) {
	c, store, h := breakerUp(t, "max_connections: 1")
	conn, err := c.ConnectHost(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConnectHost(t.Context(), h); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("second connection: %v, want ErrOverflow", err)
	}
	if n := store.Counter("cluster.up.upstream_cx_overflow").Value(); n != 1 {
		t.Errorf("upstream_cx_overflow = %d, want 1", n)
	}
	_ = conn.Close()
	if store.Gauge("cluster.up.circuit_breakers.default.cx_open").Value() != 0 {
		t.Error("cx_open stayed 1 after the connection closed")
	}
	conn, err = c.ConnectHost(t.Context(), h)
	if err != nil {
		t.Fatalf("after the close: %v", err)
	}
	_ = conn.Close()
}

// TestHTTP1BreakersNoLeak runs requests that end every way (reused,
// closed, abandoned while pending, refused) against tight limits; when
// they are done every breaker is back to 0.
func TestHTTP1BreakersNoLeak(t *testing.T) {
	// The server reports each connection it closes on a small channel:
	// this test closes many. The drain stops in a cleanup registered
	// before the server's, so it runs after it: the server's cleanup waits
	// for its connections, which report on the channel as they close (a
	// deferred stop let more than the channel holds block them forever).
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	srv := newUpstreamServer(t, nil)
	go func() {
		for {
			select {
			case <-srv.closed:
			case <-stop:
				return
			}
		}
	}()
	m, store, _ := newTestManager(t, breakerCluster("max_connections: 2, max_pending_requests: 2, max_requests: 3", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			for range 40 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rnd.IntN(3))*time.Millisecond)
				conn, err := c.AcquireHTTP1(ctx, h)
				cancel()
				if err != nil {
					continue
				}
				switch rnd.IntN(3) {
				case 0:
					c.ReleaseHTTP1(conn, true)
				case 1:
					c.ReleaseHTTP1(conn, false)
				default:
					_ = conn.Close() // the connection manager closing it
					c.ReleaseHTTP1(conn, false)
				}
			}
		})
	}
	wg.Wait()
	c.Close()
	waitFor(t, "every breaker to be released", func() bool {
		res := c.breakers()
		return res.cx.count.Load() == 0 && res.pending.count.Load() == 0 && res.rq.count.Load() == 0
	})
	for _, g := range breakerGauges {
		if v := store.Gauge(g).Value(); v != 0 {
			t.Errorf("%s = %d after the load", g, v)
		}
	}
}

// TestHTTP2BreakersConnectionOverflow: an HTTP/2 request that needs a new
// connection (the upstream's one is at its stream limit) past
// max_connections fails as an overflow rather than waiting; max_requests
// counts until the response body is closed.
func TestHTTP2BreakersConnectionOverflow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	arrived, gate := make(chan struct{}, 4), make(chan struct{})
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         protocols,
		ReadHeaderTimeout: 5 * time.Second,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			select {
			case <-gate:
			case <-r.Context().Done():
			}
			_, _ = io.WriteString(w, "ok")
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	m, store, _ := newTestManager(t, fmt.Sprintf(`
- name: h2
  circuit_breakers: {thresholds: [{max_connections: 1, max_requests: 5}]}
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}
  load_assignment:
    cluster_name: h2
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, ln.Addr().(*net.TCPAddr).Port))
	c := m.Cluster("h2")
	h := c.PickHost(nil)
	get := func() (*http.Response, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.RoundTripHTTP2(req, h)
	}
	first := make(chan error, 1)
	go func() {
		resp, err := get()
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
		first <- err
	}()
	<-arrived
	if n := c.breakers().rq.count.Load(); n != 1 {
		t.Errorf("%d requests counted in flight, want 1", n)
	}
	if _, err := get(); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("a request needing a second connection: %v, want ErrOverflow", err)
	}
	if n := store.Counter("cluster.h2.upstream_cx_overflow").Value(); n != 1 {
		t.Errorf("upstream_cx_overflow = %d, want 1", n)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := c.breakers().rq.count.Load(); n != 0 {
		t.Errorf("%d requests counted after the response body closed", n)
	}
	if n := c.breakers().cx.count.Load(); n != 1 {
		t.Errorf("%d connections counted, want the one open", n)
	}
}

// breakerUp starts an upstream and builds the cluster "up" of one host on
// it with the circuit-breaker thresholds given (a flow mapping's fields),
// returning the cluster, the stats store and the host.
func breakerUp(t *testing.T, thresholds string) (*Cluster, *stats.Store, *upstream.Host) {
	t.Helper()
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, breakerCluster(thresholds, srv.port()))
	c := m.Cluster("up")
	return c, store, c.PickHost(nil)
}
