package cluster

import (
	"errors"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestHighPriorityBreakers checks RouteAction.priority on the cluster's
// side: a request marked HIGH counts against the HIGH thresholds, so it
// goes while the DEFAULT ones are full, and its release gives its unit
// back to them; retries of each priority count apart.
func TestHighPriorityBreakers(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor(`  circuit_breakers:
    thresholds:
    - {max_requests: 1, max_retries: 1}
    - {priority: HIGH, max_requests: 1, max_retries: 1}
`, srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	high := upstream.WithHighPriority(t.Context())

	first, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireHTTP1(t.Context(), h); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("second DEFAULT request: %v, want ErrOverflow", err)
	}
	hi, err := c.AcquireHTTP1(high, h)
	if err != nil {
		t.Fatalf("HIGH request with DEFAULT full: %v", err)
	}
	for name, want := range map[string]int64{
		"cluster.up.circuit_breakers.default.rq_open": 1,
		"cluster.up.circuit_breakers.high.rq_open":    1,
	} {
		if got := store.Gauge(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if _, err := c.AcquireHTTP1(high, h); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("second HIGH request: %v, want ErrOverflow", err)
	}
	if n := store.Counter("cluster.up.upstream_rq_pending_overflow").Value(); n != 2 {
		t.Errorf("upstream_rq_pending_overflow = %d, want 2", n)
	}
	c.ReleaseHTTP1(hi, true)
	if c.breakersOf(true).rq.count.Load() != 0 || c.breakers().rq.count.Load() != 1 {
		t.Errorf("after the HIGH release: high %d, default %d in flight; want 0, 1",
			c.breakersOf(true).rq.count.Load(), c.breakers().rq.count.Load())
	}
	c.ReleaseHTTP1(first, true)
	if c.breakers().rq.count.Load() != 0 {
		t.Error("the DEFAULT request was not given back")
	}

	if !c.TryRetry(false) || c.TryRetry(false) {
		t.Error("DEFAULT max_retries 1 not enforced")
	}
	if !c.TryRetry(true) {
		t.Error("a HIGH retry was refused while only DEFAULT's retries were full")
	}
	c.ReleaseRetry(false)
	c.ReleaseRetry(true)
	if c.breakers().retries.count.Load() != 0 || c.breakersOf(true).retries.count.Load() != 0 {
		t.Error("retries not given back to their priority")
	}
}

// TestAcquireHTTP1ForPriority checks the priority a request passes with
// its acquisition (upstream.Acquire.High), as the connection manager
// does: it, not the context, picks the breakers, so a HIGH request goes
// while the DEFAULT ones are full and gives its unit back to HIGH.
func TestAcquireHTTP1ForPriority(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, _ := newTestManager(t, clusterFor(`  circuit_breakers:
    thresholds:
    - {max_requests: 1}
    - {priority: HIGH, max_requests: 1}
`, srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	first, err := c.AcquireHTTP1For(t.Context(), h, upstream.Acquire{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireHTTP1For(t.Context(), h, upstream.Acquire{}); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("second DEFAULT request: %v, want ErrOverflow", err)
	}
	hi, err := c.AcquireHTTP1For(t.Context(), h, upstream.Acquire{High: true})
	if err != nil {
		t.Fatalf("HIGH request with DEFAULT full: %v", err)
	}
	if got := c.breakersOf(true).rq.count.Load(); got != 1 {
		t.Errorf("HIGH requests in flight = %d, want 1", got)
	}
	if _, err := c.AcquireHTTP1For(t.Context(), h, upstream.Acquire{High: true}); !errors.Is(err, upstream.ErrOverflow) {
		t.Fatalf("second HIGH request: %v, want ErrOverflow", err)
	}
	c.ReleaseHTTP1(hi, true)
	c.ReleaseHTTP1(first, true)
	if c.breakersOf(true).rq.count.Load() != 0 || c.breakers().rq.count.Load() != 0 {
		t.Errorf("after the releases: high %d, default %d in flight; want 0, 0",
			c.breakersOf(true).rq.count.Load(), c.breakers().rq.count.Load())
	}
}
