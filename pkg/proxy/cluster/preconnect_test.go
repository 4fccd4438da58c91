package cluster

import (
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestPreconnect checks per_upstream_preconnect_ratio on an HTTP/1.1
// cluster: with a ratio of 2, a request opens its own connection and one
// more ahead of demand, which the next request takes without a dial;
// within max_connections.
func TestPreconnect(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor("  preconnect_policy: {per_upstream_preconnect_ratio: 2}\n", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	total := store.Counter("cluster.up.upstream_cx_total")

	first, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	// One request in flight, ratio 2: two connections.
	waitFor(t, "the preconnected connection", func() bool { return total.Value() == 2 && idleCount(c, h) == 1 })
	second, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, first)
	roundTrip(t, second)
	// Two in flight: four connections wanted, two more opened.
	waitFor(t, "two more connections", func() bool { return total.Value() == 4 })
	c.ReleaseHTTP1(first, true)
	c.ReleaseHTTP1(second, true)
	if n := c.set.Load().h1.get(h).active.Load(); n != 0 {
		t.Errorf("%d connections counted lent after the releases", n)
	}
}

// TestPreconnectWithinMaxConnections: no connection opens ahead of demand
// past max_connections.
func TestPreconnectWithinMaxConnections(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor("  preconnect_policy: {per_upstream_preconnect_ratio: 3}\n  circuit_breakers: {thresholds: [{max_connections: 1}]}\n", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	conn, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, conn)
	c.ReleaseHTTP1(conn, true)
	if n := store.Counter("cluster.up.upstream_cx_total").Value(); n != 1 {
		t.Errorf("upstream_cx_total = %d, want 1 at max_connections 1", n)
	}
}

// TestPreconnectConfig: the ratio is Envoy's 1 to 3, on HTTP/1.1 clusters.
func TestPreconnectConfig(t *testing.T) {
	for extra, want := range map[string]string{
		"  preconnect_policy: {per_upstream_preconnect_ratio: 0.5}\n":                             "preconnect_policy.per_upstream_preconnect_ratio: 0.5 is not between 1 and 3",
		"  preconnect_policy: {per_upstream_preconnect_ratio: 2}\n  http2_protocol_options: {}\n": "preconnect_policy.per_upstream_preconnect_ratio: not supported on a cluster whose requests may go over HTTP/2",
	} {
		_, err := NewManager(parseClusters(t, clusterFor(extra, 1)), Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", extra, err, want)
		}
	}
}

// idleCount is the number of idle connections of h's pool.
func idleCount(c *Cluster, h *upstream.Host) int {
	return c.set.Load().h1.get(h).idleCount()
}
