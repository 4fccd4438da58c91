package cluster

import (
	"errors"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestPerHostMaxConnections follows Envoy's per_host_thresholds with
// max_connections 1 on two hosts: each host gets one connection while
// the cluster's limit has room; a second request to a host waits pending
// (upstream_cx_overflow) and gets the connection when it is released; a
// TCP proxy connection to a host at its limit is refused.
func TestPerHostMaxConnections(t *testing.T) {
	a, b := newUpstreamServer(t, nil), newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor("  circuit_breakers:\n    per_host_thresholds:\n    - {max_connections: 1}\n", a.port(), b.port()))
	c := m.Cluster("up")
	hosts := c.Hosts()
	counter := func(n string) uint64 { return store.Counter("cluster.up." + n).Value() }
	gauge := func(n string) int64 { return store.Gauge("cluster.up." + n).Value() }

	first, err := c.AcquireHTTP1(t.Context(), hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	// The other host has its own limit.
	other, err := c.AcquireHTTP1(t.Context(), hosts[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := counter("upstream_cx_overflow"); got != 0 {
		t.Fatalf("upstream_cx_overflow = %d after one connection per host, want 0", got)
	}

	second := acquireAsync(t, c, hosts[0])
	waitFor(t, "the second request to be pending", func() bool { return gauge("upstream_rq_pending_active") == 1 })
	if got := counter("upstream_cx_overflow"); got != 1 {
		t.Errorf("upstream_cx_overflow = %d with the host at its limit, want 1", got)
	}
	// A TCP proxy's connection to the full host is refused.
	if _, err := c.ConnectHost(t.Context(), hosts[0]); !errors.Is(err, upstream.ErrOverflow) {
		t.Errorf("TCP connection to the full host: %v, want ErrOverflow", err)
	}
	if got := counter("upstream_cx_overflow"); got != 2 {
		t.Errorf("upstream_cx_overflow = %d after the TCP refusal, want 2", got)
	}

	handOver(t, c, first, second)
	roundTrip(t, other)
	c.ReleaseHTTP1(other, true)
	if a.accepted.Load() != 1 || b.accepted.Load() != 1 {
		t.Errorf("the hosts accepted %d and %d connections, want 1 each", a.accepted.Load(), b.accepted.Load())
	}
}

// TestPerHostThresholdsConfig checks per_host_thresholds' checks: one
// entry per priority, and a note for the limits Envoy does not apply per
// host.
func TestPerHostThresholdsConfig(t *testing.T) {
	_, err := NewManager(parseClusters(t, clusterFor("  circuit_breakers:\n    per_host_thresholds:\n    - {max_connections: 1}\n    - {max_connections: 2}\n", 1)), Options{})
	if err == nil || len(errorLines(err)) != 1 || errorLines(err)[0] != "static_resources.clusters[0].circuit_breakers.per_host_thresholds[1].priority: DEFAULT is already set by per_host_thresholds[0]" {
		t.Errorf("two DEFAULT entries: %v", err)
	}
	cb := parseClusters(t, clusterFor("  circuit_breakers:\n    per_host_thresholds:\n    - {max_connections: 3, max_requests: 5}\n    - {priority: HIGH, max_connections: 4}\n", 1))[0].GetCircuitBreakers()
	limits, notes, errs := buildPerHostThresholds(cb)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if limits != [numPriorities]perHostLimit{{set: true, max: 3}, {set: true, max: 4}} {
		t.Errorf("limits %v", limits)
	}
	if len(notes) != 1 || notes[0] != "circuit_breakers.per_host_thresholds[0]: only max_connections applies per host; the other limits have no effect (Envoy ignores them too)" {
		t.Errorf("notes %q", notes)
	}
}
