package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// aggregateClusters are a primary cluster of four hosts, a secondary of
// two, and the aggregate cluster failing over from the one to the other.
const aggregateClusters = `
- name: primary
  load_assignment:
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1001}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1002}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1003}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1004}}}
- name: secondary
  load_assignment:
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2001}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2002}}}
- name: agg
  lb_policy: CLUSTER_PROVIDED
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [primary, missing, secondary]
`

// markUnhealthy fails the active health check of c's first n hosts.
func markUnhealthy(c *Cluster, n int) {
	for _, h := range c.Hosts()[:n] {
		h.SetHealthFlag(upstream.FailedActiveHC)
	}
	c.HealthChanged()
}

// countPicks picks n times and counts the picks of each cluster by the
// port's first digit (1: primary, 2: secondary).
func countPicks(t *testing.T, c *Cluster, n int) (primary, secondary int) {
	t.Helper()
	for range n {
		h := c.PickHost(&upstream.PickContext{})
		if h == nil {
			t.Fatal("no host picked")
		}
		switch {
		case strings.Contains(h.Address, ":1"):
			primary++
		case strings.Contains(h.Address, ":2"):
			secondary++
		}
	}
	return primary, secondary
}

func TestAggregateFailover(t *testing.T) {
	m, store, _ := newTestManager(t, aggregateClusters)
	agg, primary := m.Cluster("agg"), m.Cluster("primary")
	// The test's random source counts 0, 1, 2...: 100 picks draw each
	// point of the priority load once.
	if p, s := countPicks(t, agg, 100); p != 100 || s != 0 {
		t.Fatalf("all healthy: primary %d, secondary %d picks; want 100, 0", p, s)
	}
	// 2 of 4 healthy: 50% * 1.4 = 70% of the load stays on the primary.
	markUnhealthy(primary, 2)
	if p, s := countPicks(t, agg, 100); p != 70 || s != 30 {
		t.Fatalf("half healthy: primary %d, secondary %d picks; want 70, 30", p, s)
	}
	// 1 of 4: 35%.
	markUnhealthy(primary, 3)
	if p, s := countPicks(t, agg, 100); p != 35 || s != 65 {
		t.Fatalf("a quarter healthy: primary %d, secondary %d picks; want 35, 65", p, s)
	}
	markUnhealthy(primary, 4)
	if p, s := countPicks(t, agg, 100); p != 0 || s != 100 {
		t.Fatalf("none healthy: primary %d, secondary %d picks; want 0, 100", p, s)
	}
	// The primary's hosts were never picked unhealthy.
	for _, h := range primary.Hosts() {
		h.ClearHealthFlag(upstream.FailedActiveHC)
	}
	primary.HealthChanged()
	if p, s := countPicks(t, agg, 100); p != 100 || s != 0 {
		t.Fatalf("recovered: primary %d, secondary %d picks; want 100, 0", p, s)
	}
	if v := store.Counter("cluster.agg.upstream_cx_none_healthy").Value(); v != 0 {
		t.Errorf("upstream_cx_none_healthy = %d, want 0", v)
	}
}

func TestAggregateNoHost(t *testing.T) {
	m, store, _ := newTestManager(t, aggregateClusters)
	agg := m.Cluster("agg")
	for _, name := range []string{"primary", "secondary"} {
		markUnhealthy(m.Cluster(name), len(m.Cluster(name).Hosts()))
	}
	// Every level in panic: the load follows the host counts and the
	// chosen cluster's panic mode picks among all its hosts.
	if h := agg.PickHost(nil); h == nil {
		t.Fatal("total panic: no host picked")
	}
	if v := store.Counter("cluster.primary.lb_healthy_panic").Value() + store.Counter("cluster.secondary.lb_healthy_panic").Value(); v != 1 {
		t.Errorf("lb_healthy_panic of the listed clusters = %d, want 1", v)
	}
}

func TestAggregatePreviousPriorities(t *testing.T) {
	m, _, _ := newTestManager(t, aggregateClusters)
	agg := m.Cluster("agg")
	h := agg.PickHost(nil)
	level, ok := agg.LinearPriority(h)
	if !ok || level != 0 {
		t.Fatalf("LinearPriority(primary host) = %d, %v; want 0, true", level, ok)
	}
	for range 20 {
		h := agg.PickHost(&upstream.PickContext{ExcludedPriorities: []bool{true}})
		if l, _ := agg.LinearPriority(h); l != 1 {
			t.Fatalf("pick excluding level 0 went to level %d (%s)", l, h.Address)
		}
	}
	sec := m.Cluster("secondary").Hosts()[0]
	if l, ok := agg.LinearPriority(sec); !ok || l != 1 {
		t.Fatalf("LinearPriority(secondary host) = %d, %v; want 1, true", l, ok)
	}
	if v := agg.ForHost(sec); v == nil || v.under != m.Cluster("secondary") {
		t.Fatal("ForHost(secondary host) does not go through the secondary cluster")
	}
}

func TestAggregateCDS(t *testing.T) {
	m, _, _ := newTestManager(t, aggregateClusters)
	agg := m.Cluster("agg")
	markUnhealthy(m.Cluster("primary"), 4)
	markUnhealthy(m.Cluster("secondary"), 2)
	// "missing" arrives by discovery: healthy, it takes the load.
	missing := parseClusters(t, `
- name: missing
  load_assignment:
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3001}}}
`)
	if err := m.ApplyDiscovered(missing, "1", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if h := agg.PickHost(nil); h == nil || h.Address != "127.0.0.1:3001" {
			t.Fatalf("picked %v, want the discovered cluster's host", h)
		}
	}
	// Removed again: back to total panic over the static ones.
	if err := m.ApplyDiscovered(nil, "2", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if h := agg.PickHost(nil); h == nil || h.Address == "127.0.0.1:3001" {
			t.Fatalf("picked %v after the cluster's removal", h)
		}
	}
}

func TestAggregateConfigErrors(t *testing.T) {
	base := `
- name: a
  lb_policy: CLUSTER_PROVIDED
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [b]
- name: b
  lb_policy: CLUSTER_PROVIDED
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [a]
`
	tests := []struct {
		name, src, want string
	}{
		{"cycle", base, "static_resources.clusters[0].cluster_type.typed_config.clusters: circular reference between aggregate clusters: a -> b -> a"},
		{"self", `
- name: a
  lb_policy: CLUSTER_PROVIDED
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [a]
`, "static_resources.clusters[0].cluster_type.typed_config.clusters[0]: aggregate cluster \"a\" lists itself"},
		{"lb policy", `
- name: a
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [x]
`, "static_resources.clusters[0].lb_policy: cluster provided LB not specified"},
		{"hosts", `
- name: a
  lb_policy: CLUSTER_PROVIDED
  load_assignment: {cluster_name: a}
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [x]
`, "static_resources.clusters[0].load_assignment: not supported on an aggregate cluster"},
		{"other type", `
- name: a
  cluster_type:
    name: envoy.clusters.redis
`, "static_resources.clusters[0].cluster_type.name: cluster type \"envoy.clusters.redis\" without typed_config is not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewManager(parseClusters(t, tc.src), Options{Stats: stats.NewStore()})
			lines := errorLines(err)
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, tc.want) }) {
				t.Fatalf("errors %q, want one starting with %q", lines, tc.want)
			}
		})
	}
}

func TestAggregateCycleByDiscovery(t *testing.T) {
	m, _, _ := newTestManager(t, aggregateClusters)
	// "missing" as an aggregate listing agg closes a cycle.
	err := m.ApplyDiscovered(parseClusters(t, `
- name: missing
  lb_policy: CLUSTER_PROVIDED
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [agg]
`), "1", time.Now())
	if err == nil || !strings.Contains(err.Error(), "resources[0].cluster_type.typed_config.clusters: circular reference between aggregate clusters") {
		t.Fatalf("err = %v, want the circular reference refused", err)
	}
}

func TestAggregateHostReselection(t *testing.T) {
	m, _, _ := newTestManager(t, aggregateClusters)
	agg := m.Cluster("agg")
	// previous_hosts with every primary host tried: the reselections
	// find no other primary host, but may choose the level again; with
	// all the load on the primary they keep the last pick, as Envoy does.
	tried := m.Cluster("primary").Hosts()
	h := agg.PickHost(&upstream.PickContext{PreviousHosts: tried, HostReselections: 3})
	if h == nil || !slices.Contains(tried, h) {
		t.Fatalf("picked %v, want a primary host (the last of the reselections)", h)
	}
	// One primary host not yet tried: a reselection finds it.
	for range 10 {
		h := agg.PickHost(&upstream.PickContext{PreviousHosts: tried[:3], HostReselections: 10})
		if h != tried[3] {
			t.Fatalf("picked %v, want the untried host %s", h, tried[3].Address)
		}
	}
}
