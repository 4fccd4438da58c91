package cluster

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// warmingNamed returns the discovered cluster warming under name.
func warmingNamed(m *Manager, name string) *Cluster {
	m.dyn.mu.Lock()
	defer m.dyn.mu.Unlock()
	return m.dyn.warming[name]
}

// sortedNames are the active clusters' names, sorted: clusters that warm
// together become active in the order their promotions run.
func sortedNames(m *Manager) []string {
	out := names(m)
	slices.Sort(out)
	return out
}

// waitActive waits (at most 5 s) until the active clusters are want
// (sorted).
func waitActive(t *testing.T, m *Manager, want []string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(sortedNames(m), want) {
		if time.Now().After(deadline) {
			t.Fatalf("active clusters = %v, want %v", names(m), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// Many EDS clusters warming at once are promoted together (in batches):
// every one becomes active, and a changed cluster that warms takes its
// predecessor's place.
func TestWarmedClustersPromotedTogether(t *testing.T) {
	m, store, clock := newTestManager(t, "[]")
	const n = 300
	var src strings.Builder
	var want []string
	for i := range n {
		fmt.Fprintf(&src, "- {name: c%d, type: EDS, connect_timeout: 1s}\n", i)
		want = append(want, fmt.Sprintf("c%d", i))
	}
	slices.Sort(want)
	if err := m.ApplyDiscovered(parseClusters(t, src.String()), "v1", clock.now()); err != nil {
		t.Fatal(err)
	}
	if got := names(m); len(got) != 0 {
		t.Fatalf("warming clusters are active: %v", got)
	}
	if v := store.Gauge("cluster_manager.warming_clusters").Value(); v != n {
		t.Fatalf("warming_clusters = %d, want %d", v, n)
	}
	warming := make([]*Cluster, n)
	for i, name := range want {
		if warming[i] = warmingNamed(m, name); warming[i] == nil {
			t.Fatalf("%s is not warming", name)
		}
	}
	for _, c := range warming {
		c.EndWarming()
	}
	waitActive(t, m, want)
	for i, name := range want {
		if m.Cluster(name) != warming[i] {
			t.Fatalf("%s is not the cluster that warmed", name)
		}
	}
	if a, w := store.Gauge("cluster_manager.active_clusters").Value(), store.Gauge("cluster_manager.warming_clusters").Value(); a != n || w != 0 {
		t.Fatalf("active_clusters %d, warming_clusters %d", a, w)
	}

	// c7 changes: the old one serves until the new one warms, which then
	// takes its place.
	order := names(m)
	old := m.Cluster("c7")
	src.Reset()
	for i := range n {
		timeout := "1s"
		if i == 7 {
			timeout = "2s"
		}
		fmt.Fprintf(&src, "- {name: c%d, type: EDS, connect_timeout: %s}\n", i, timeout)
	}
	if err := m.ApplyDiscovered(parseClusters(t, src.String()), "v2", clock.now()); err != nil {
		t.Fatal(err)
	}
	next := warmingNamed(m, "c7")
	if next == nil || m.Cluster("c7") != old {
		t.Fatal("the changed cluster does not warm beside the old one")
	}
	next.EndWarming()
	deadline := time.Now().Add(5 * time.Second)
	for m.Cluster("c7") != next {
		if time.Now().After(deadline) {
			t.Fatal("the changed cluster did not replace the old one")
		}
		time.Sleep(time.Millisecond)
	}
	if got := names(m); !slices.Equal(got, order) {
		t.Fatalf("active clusters = %v, want %v (the same order)", got, order)
	}
}

// EDS clusters that wait for their load assignment alone hold no
// goroutine while they warm (a goroutine and its stack each cost a
// 10,000-cluster update a tenth of its CPU), and are promoted when their
// warming ends; a warming cluster removed by the next update is never
// promoted.
func TestWarmingEDSClustersHoldNoGoroutine(t *testing.T) {
	m, _, clock := newTestManager(t, "[]")
	const n = 300
	var src strings.Builder
	for i := range n {
		fmt.Fprintf(&src, "- {name: c%d, type: EDS, connect_timeout: 1s}\n", i)
	}
	before := runtime.NumGoroutine()
	if err := m.ApplyDiscovered(parseClusters(t, src.String()), "v1", clock.now()); err != nil {
		t.Fatal(err)
	}
	if grown := runtime.NumGoroutine() - before; grown >= n/2 {
		t.Fatalf("%d warming EDS clusters added %d goroutines", n, grown)
	}
	// c0 is removed while it warms: its warming ends (retired), and it
	// must not become active.
	removed := warmingNamed(m, "c0")
	src.Reset()
	var want []string
	for i := 1; i < n; i++ {
		fmt.Fprintf(&src, "- {name: c%d, type: EDS, connect_timeout: 1s}\n", i)
		want = append(want, fmt.Sprintf("c%d", i))
	}
	slices.Sort(want)
	if err := m.ApplyDiscovered(parseClusters(t, src.String()), "v2", clock.now()); err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		warmingNamed(m, name).EndWarming()
	}
	waitActive(t, m, want)
	if m.Cluster("c0") != nil || removed == nil {
		t.Fatal("the removed warming cluster became active")
	}
}
