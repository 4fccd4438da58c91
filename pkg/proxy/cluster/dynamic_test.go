package cluster

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// names lists the active clusters' names in order.
func names(m *Manager) []string {
	var out []string
	for _, c := range m.Clusters() {
		out = append(out, c.Name())
	}
	return out
}

func TestApplyDiscoveredAddsUpdatesRemoves(t *testing.T) {
	m, store, clock := newTestManager(t, `
- {name: static, connect_timeout: 1s, load_assignment: {cluster_name: static, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}
`)
	one := parseClusters(t, `
- {name: a, connect_timeout: 1s, load_assignment: {cluster_name: a, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}}]}]}}
- {name: b, connect_timeout: 1s, load_assignment: {cluster_name: b, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3}}}}]}]}}
`)
	if err := m.ApplyDiscovered(one, "v1", clock.now()); err != nil {
		t.Fatalf("v1: %v", err)
	}
	if got, want := names(m), []string{"static", "a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("clusters = %v, want %v", got, want)
	}
	a := m.Cluster("a")
	if !a.AddedViaAPI() || m.Cluster("static").AddedViaAPI() {
		t.Fatal("added_via_api is wrong")
	}

	// The same set again changes nothing; a changed cluster is replaced.
	if err := m.ApplyDiscovered(one, "v1", clock.now()); err != nil {
		t.Fatalf("v1 again: %v", err)
	}
	if m.Cluster("a") != a {
		t.Fatal("an unchanged cluster was rebuilt")
	}
	two := parseClusters(t, `
- {name: a, connect_timeout: 2s, load_assignment: {cluster_name: a, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}}]}]}}
- {name: static, connect_timeout: 9s}
`)
	clock.t = clock.t.Add(time.Minute)
	if err := m.ApplyDiscovered(two, "v2", clock.now()); err != nil {
		t.Fatalf("v2: %v", err)
	}
	if m.Cluster("a") == a || m.Cluster("b") != nil {
		t.Fatal("a not replaced or b not removed")
	}
	if m.Cluster("static").AddedViaAPI() {
		t.Fatal("a static cluster was taken over by discovery")
	}
	counts := map[string]uint64{}
	for _, name := range []string{"cluster_added", "cluster_modified", "cluster_removed"} {
		counts[name] = store.Counter("cluster_manager." + name).Value()
	}
	if want := map[string]uint64{"cluster_added": 3, "cluster_modified": 1, "cluster_removed": 1}; !maps.Equal(counts, want) {
		t.Fatalf("counters = %v, want %v", counts, want)
	}
	if v := store.Gauge("cluster_manager.active_clusters").Value(); v != 2 {
		t.Fatalf("active_clusters = %d, want 2", v)
	}
	d := m.Discovered()
	if len(d) != 1 || d[0].Version != "v2" || !d[0].LastUpdated.Equal(clock.now()) || d[0].Warming {
		t.Fatalf("discovered = %+v", d)
	}
}

func TestApplyDiscoveredRejectsWhole(t *testing.T) {
	m, _, clock := newTestManager(t, `[]`)
	bad := parseClusters(t, `
- {name: a, connect_timeout: 1s}
- {name: a, connect_timeout: 1s}
- {name: e, connect_timeout: 1s, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}, load_assignment: {cluster_name: e}}
`)
	err := m.ApplyDiscovered(bad, "v1", clock.now())
	got := errorLines(err)
	want := []string{
		`resources[1].name: duplicate cluster name "a" (also resources[0])`,
		`resources[2].load_assignment: an EDS cluster's endpoints come from eds_cluster_config; remove load_assignment`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(m.Clusters()) != 0 {
		t.Fatal("a rejected update added clusters")
	}
}

// TestApplyDiscoveredChecksOnlyChangedClusters checks that a resent
// unchanged cluster is neither checked nor rebuilt, that a changed or new
// one is checked, and that a check's error rejects the update whole.
func TestApplyDiscoveredChecksOnlyChangedClusters(t *testing.T) {
	m, _, clock := newTestManager(t, `[]`)
	v1 := parseClusters(t, `
- {name: a, connect_timeout: 1s, load_assignment: {cluster_name: a, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}}]}]}}
- {name: b, connect_timeout: 1s, load_assignment: {cluster_name: b, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3}}}}]}]}}
`)
	var checked []string
	check := func(_ int, cfg *clusterv3.Cluster) error {
		checked = append(checked, cfg.GetName())
		return nil
	}
	version := func(int) string { return "v" }
	if err := m.ApplyDiscoveredChecked(v1, version, clock.now(), check); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(checked, []string{"a", "b"}) {
		t.Fatalf("first update checked %v", checked)
	}
	a := m.Cluster("a")
	v2 := parseClusters(t, `
- {name: a, connect_timeout: 1s, load_assignment: {cluster_name: a, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}}]}]}}
- {name: b, connect_timeout: 5s, load_assignment: {cluster_name: b, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3}}}}]}]}}
- {name: c, connect_timeout: 1s, load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 4}}}}]}]}}
`)
	checked = nil
	if err := m.ApplyDiscoveredChecked(v2, version, clock.now(), check); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(checked, []string{"b", "c"}) {
		t.Fatalf("second update checked %v, want the changed b and the new c", checked)
	}
	if m.Cluster("a") != a || m.Cluster("b").settings.connectTimeout != 5*time.Second || m.Cluster("c") == nil {
		t.Fatal("a must stay, b be replaced and c be added")
	}

	b := m.Cluster("b")
	refuse := func(i int, cfg *clusterv3.Cluster) error {
		return errors.New("resources[" + strconv.Itoa(i) + "]: refused " + cfg.GetName())
	}
	v3 := slices.Clone(v2[:2])
	v3 = append(v3, parseClusters(t, `[{name: d, connect_timeout: 1s}]`)...)
	err := m.ApplyDiscoveredChecked(v3, version, clock.now(), refuse)
	if err == nil || err.Error() != "resources[2]: refused d" {
		t.Fatalf("error %v, want only the new cluster's", err)
	}
	if m.Cluster("b") != b || m.Cluster("c") == nil || m.Cluster("d") != nil {
		t.Fatal("a rejected update changed the clusters")
	}
}
