package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// upHosts is a load assignment of 127.0.0.1 ports, one endpoint each.
func upHosts(ports ...int) string {
	s := "\n  load_assignment:\n    cluster_name: up\n    endpoints:\n    - lb_endpoints:"
	for _, p := range ports {
		s += fmt.Sprintf("\n      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}", p)
	}
	return s
}

// TestHashPolicyClusters checks that a ring hash or maglev cluster sends a
// hash key to one host, whatever else happens, and publishes its gauges.
func TestHashPolicyClusters(t *testing.T) {
	tests := map[string]struct {
		policy string
		gauges map[string]int64
	}{
		"ring hash": {
			policy: "lb_policy: RING_HASH\n  ring_hash_lb_config: {minimum_ring_size: 12}",
			gauges: map[string]int64{"ring_hash_lb.size": 12, "ring_hash_lb.min_hashes_per_host": 2, "ring_hash_lb.max_hashes_per_host": 2},
		},
		"maglev": {
			policy: "lb_policy: MAGLEV\n  maglev_lb_config: {table_size: 7}",
			gauges: map[string]int64{"maglev_lb.min_entries_per_host": 1, "maglev_lb.max_entries_per_host": 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, store, _ := newTestManager(t, "- name: up\n  "+tc.policy+upHosts(90, 91, 92, 93, 94, 95))
			c := m.Cluster("up")
			for k := range uint64(50) {
				first := c.PickHost(&upstream.PickContext{Hash: k * 0x9e3779b97f4a7c15, HasHash: true})
				for range 3 {
					if h := c.PickHost(&upstream.PickContext{Hash: k * 0x9e3779b97f4a7c15, HasHash: true}); h != first {
						t.Fatalf("key %d went to %s, then to %s", k, first.Address, h.Address)
					}
				}
			}
			got := map[string]int64{}
			for n := range tc.gauges {
				got[n] = store.Gauge("cluster.up." + n).Value()
			}
			if diff := cmp.Diff(tc.gauges, got); diff != "" {
				t.Errorf("gauges (-want +got):\n%s", diff)
			}
		})
	}
}

// hasherFunc is an upstream.Hasher.
type hasherFunc func() (uint64, bool)

func (f hasherFunc) PickHash() (uint64, bool) { return f() }

// TestHashComputedOnlyWhenRead checks that a cluster computes the pick's
// hash only when its balancer routes on it: the router's hash policy may
// generate a cookie, as Envoy's runs only for its hash-based balancers.
func TestHashComputedOnlyWhenRead(t *testing.T) {
	m, _, _ := newTestManager(t, "- name: rr"+upHosts(1, 2)+"\n- name: ring\n  lb_policy: RING_HASH"+upHosts(1, 2))
	for name, want := range map[string]int{"rr": 0, "ring": 1} {
		calls := 0
		pc := &upstream.PickContext{Hasher: hasherFunc(func() (uint64, bool) { calls++; return 7, true })}
		m.Cluster(name).PickHost(pc)
		if calls != want {
			t.Errorf("%s: the hash was computed %d times, want %d", name, calls, want)
		}
	}
}

// TestSlowStartNewHosts checks that hosts added after the cluster's first
// host set ramp up, and those of the first set do not.
func TestSlowStartNewHosts(t *testing.T) {
	m, _, clock := newTestManager(t, "- name: up\n  round_robin_lb_config: {slow_start_config: {slow_start_window: 10s}}"+upHosts(1, 2))
	c := m.Cluster("up")
	share := func(port string, n int) float64 {
		got := 0
		for range n {
			if h := c.PickHost(nil); h.Address == "127.0.0.1:"+port {
				got++
			}
		}
		return float64(got) / float64(n)
	}
	if s := share("1", 1000); s != 0.5 {
		t.Errorf("first set: host 1 got %v of the picks, want 0.5", s)
	}
	old := c.Hosts()
	clock.t = clock.t.Add(time.Minute)
	fresh := &upstream.Host{Address: "127.0.0.1:3", Cluster: "up", Weight: 1}
	c.SetHosts([][]*upstream.Host{{old[0], old[1], fresh}})
	if !fresh.Created.Equal(clock.t) || !old[0].Created.Equal(clock.t.Add(-time.Minute)) {
		t.Errorf("created: new host %v, old host %v", fresh.Created, old[0].Created)
	}
	// Halfway through its window the new host has half its weight: 0.5
	// of 2.5.
	clock.t = clock.t.Add(5 * time.Second)
	if s := share("3", 2500); s < 0.19 || s > 0.21 {
		t.Errorf("halfway: the new host got %v of the picks, want 0.2", s)
	}
	clock.t = clock.t.Add(10 * time.Second)
	if s := share("3", 3000); s < 0.33 || s > 0.34 {
		t.Errorf("after the window: the new host got %v of the picks, want 1/3", s)
	}
	// An EDS update builds its hosts again: those whose address stays
	// keep their creation time.
	again := &upstream.Host{Address: "127.0.0.1:1", Cluster: "up", Weight: 1}
	clock.t = clock.t.Add(time.Second)
	c.SetHosts([][]*upstream.Host{{again, &upstream.Host{Address: "127.0.0.1:4", Cluster: "up", Weight: 1}}})
	if !again.Created.Equal(old[0].Created) {
		t.Errorf("a host rebuilt with the same address was created at %v, want %v", again.Created, old[0].Created)
	}
}

// TestIgnoredLBSettings checks the warnings for load balancer settings the
// cluster's policy does not read, which Envoy accepts and ignores.
func TestIgnoredLBSettings(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []string
	}{
		"another policy's settings": {
			yaml: `[{name: c, lb_policy: ROUND_ROBIN, maglev_lb_config: {table_size: 7}}]`,
			want: []string{"maglev_lb_config has no effect with this load balancing policy (Envoy ignores it too)"},
		},
		"consistent hashing without a hash-based policy": {
			yaml: `[{name: c, lb_policy: LEAST_REQUEST, common_lb_config: {consistent_hashing_lb_config: {use_hostname_for_hashing: true}}}]`,
			want: []string{"common_lb_config.consistent_hashing_lb_config has no effect with LEAST_REQUEST (Envoy ignores it too)"},
		},
		"endpoint_stale_after outside EDS": {
			yaml: `[{name: c, load_assignment: {cluster_name: c, policy: {endpoint_stale_after: 5s}}}]`,
			want: []string{"load_assignment.policy.endpoint_stale_after has no effect on a cluster whose endpoints are not discovered (Envoy ignores it too)"},
		},
		"the policy's own settings": {
			yaml: `[{name: c, lb_policy: RING_HASH, ring_hash_lb_config: {}, common_lb_config: {consistent_hashing_lb_config: {use_hostname_for_hashing: true}}}]`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, errs := buildSettings(parseClusters(t, tc.yaml)[0], nil)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if diff := cmp.Diff(tc.want, s.notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}
