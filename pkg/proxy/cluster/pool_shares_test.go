package cluster

import (
	"context"
	"runtime"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// acquireShare lends a connection to h for a request naming share.
func acquireShare(t *testing.T, c *Cluster, h *upstream.Host, share uint32) *upstream.Conn {
	t.Helper()
	conn, err := c.AcquireHTTP1For(context.Background(), h, upstream.Acquire{Share: share})
	if err != nil {
		t.Fatalf("acquire (share %d): %v", share, err)
	}
	return conn
}

// TestPoolShares: with several shares, a released connection goes back to
// the share of the request that borrowed it, a request takes from its own
// share first (LIFO within it), then from the others before it dials, and
// no connection is lent twice or lost.
func TestPoolShares(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	c.shares = 2 // as with GOMAXPROCS 2, whatever this machine's
	h := c.PickHost(nil)
	p := c.set.Load().h1.get(h)

	a := acquireShare(t, c, h, 0)
	b := acquireShare(t, c, h, 1)
	if a == b {
		t.Fatal("one connection was lent twice")
	}
	roundTrip(t, a)
	roundTrip(t, b)
	c.ReleaseHTTP1(a, true)
	c.ReleaseHTTP1(b, true)
	if n0, n1 := len(p.shares[0].idle), len(p.shares[1].idle); n0 != 1 || n1 != 1 {
		t.Fatalf("idle per share = %d, %d; want 1, 1", n0, n1)
	}
	// Each share's request gets its own share's connection back (hints
	// beyond the share count wrap).
	if got := acquireShare(t, c, h, 3); got != b {
		t.Error("a request of share 1 did not get share 1's connection")
	}
	if got := acquireShare(t, c, h, 0); got != a {
		t.Error("a request of share 0 did not get share 0's connection")
	}
	roundTrip(t, a)
	roundTrip(t, b)
	c.ReleaseHTTP1(a, true)
	c.ReleaseHTTP1(b, true)

	// Share 1 empty: its requests take share 0's, and nothing is dialled.
	x := acquireShare(t, c, h, 1)
	y := acquireShare(t, c, h, 1)
	if x != b || y != a {
		t.Errorf("share 1 took %p then %p, want its own %p then share 0's %p", x, y, b, a)
	}
	if got := srv.accepted.Load(); got != 2 {
		t.Errorf("upstream accepted %d connections, want 2 (the idle ones were reused)", got)
	}
	// Both now go back to share 1, the share of the requests that
	// borrowed them.
	roundTrip(t, x)
	roundTrip(t, y)
	c.ReleaseHTTP1(x, true)
	c.ReleaseHTTP1(y, true)
	if n0, n1 := len(p.shares[0].idle), len(p.shares[1].idle); n0 != 0 || n1 != 2 {
		t.Fatalf("idle per share = %d, %d; want 0, 2", n0, n1)
	}
	if n := p.idleCount(); n != 2 {
		t.Errorf("idleCount = %d, want 2", n)
	}
	// Retiring closes every share's idle connections.
	p.retire()
	if n := p.idleCount(); n != 0 {
		t.Errorf("idle after retire = %d, want 0", n)
	}
}

// TestPoolSharesWaiter: a request waiting at max_connections gets the
// connection a request of another share releases.
func TestPoolSharesWaiter(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, _ := newTestManager(t, breakerCluster("max_connections: 1", srv.port()))
	c := m.Cluster("up")
	c.shares = 2
	h := c.PickHost(nil)
	a := acquireShare(t, c, h, 0)
	got := make(chan *upstream.Conn, 1)
	go func() {
		conn, err := c.AcquireHTTP1For(context.Background(), h, upstream.Acquire{Share: 1})
		if err != nil {
			t.Error(err)
		}
		got <- conn
	}()
	p := c.set.Load().h1.get(h)
	for p.nwaiters.Load() == 0 {
		select {
		case conn := <-got:
			t.Fatalf("the second request got %p without waiting", conn)
		default:
		}
		runtime.Gosched()
	}
	roundTrip(t, a)
	c.ReleaseHTTP1(a, true)
	if conn := <-got; conn != a {
		t.Fatalf("the waiter got %p, want the released %p", conn, a)
	}
	roundTrip(t, a)
	c.ReleaseHTTP1(a, true)
	if n0, n1 := len(p.shares[0].idle), len(p.shares[1].idle); n0 != 0 || n1 != 1 {
		t.Errorf("idle per share = %d, %d; want 0, 1 (the waiter's share)", n0, n1)
	}
}
