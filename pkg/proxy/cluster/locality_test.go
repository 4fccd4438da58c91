package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// zonedEndpoints renders load_assignment endpoints: one
// locality_lb_endpoints entry per zone of region r, with count hosts
// 127.0.<zone index>.<n>:80 and an optional locality weight (0: unset).
func zonedEndpoints(zones ...zoned) string {
	var b strings.Builder
	for zi, z := range zones {
		fmt.Fprintf(&b, "\n    - locality: {region: r, zone: %s}", z.zone)
		if z.weight != 0 {
			fmt.Fprintf(&b, "\n      load_balancing_weight: %d", z.weight)
		}
		b.WriteString("\n      lb_endpoints:")
		for i := range z.count {
			fmt.Fprintf(&b, "\n      - endpoint: {address: {socket_address: {address: 127.0.%d.%d, port_value: 80}}}", zi+1, i+1)
		}
	}
	return b.String()
}

type zoned struct {
	zone          string
	count, weight int
}

// zoneOf counts picks per zone.
func zoneOf(c *Cluster, n int) map[string]int {
	got := map[string]int{}
	for range n {
		h := c.PickHost(nil)
		if h == nil {
			got["<nil>"]++
			continue
		}
		got[h.Locality.Zone]++
	}
	return got
}

func TestLocalityConfigErrors(t *testing.T) {
	tests := map[string]struct {
		yaml  string
		local string
		want  []string
	}{
		"routing_enabled above 100": {
			yaml: `
- name: web
  common_lb_config: {zone_aware_lb_config: {routing_enabled: {value: 150}}}`,
			want: []string{"static_resources.clusters[0].common_lb_config.zone_aware_lb_config.routing_enabled.value: 150 is not a percentage (0 to 100)"},
		},
		"local cluster not defined": {
			yaml: `
- name: web`,
			local: "mesh",
			want:  []string{`cluster_manager.local_cluster_name: local cluster "mesh" must be defined in static_resources.clusters`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewManager(parseClusters(t, tc.yaml), Options{Stats: stats.NewStore(), LocalClusterName: tc.local})
			if diff := cmp.Diff(tc.want, errorLines(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if err != nil {
				configErrors(t, err)
			}
		})
	}
}

func TestLocalityWeightedCluster(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want map[string]int
	}{
		"locality weights 1 and 3": {
			yaml: `
- name: web
  common_lb_config: {locality_weighted_lb_config: {}}
  load_assignment:
    cluster_name: web
    endpoints:` + zonedEndpoints(zoned{"a", 2, 1}, zoned{"b", 1, 3}),
			want: map[string]int{"a": 100, "b": 300},
		},
		"a locality without weight gets nothing": {
			yaml: `
- name: web
  common_lb_config: {locality_weighted_lb_config: {}}
  load_assignment:
    cluster_name: web
    endpoints:` + zonedEndpoints(zoned{"a", 2, 0}, zoned{"b", 1, 3}),
			want: map[string]int{"b": 400},
		},
		"weights are ignored without locality_weighted_lb_config": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:` + zonedEndpoints(zoned{"a", 2, 1}, zoned{"b", 2, 3}),
			want: map[string]int{"a": 200, "b": 200},
		},
		"a typed round robin's locality_lb_config": {
			yaml: `
- name: web
  load_balancing_policy: {policies: [{typed_extension_config: {name: rr, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin, locality_lb_config: {locality_weighted_lb_config: {}}}}}]}
  load_assignment:
    cluster_name: web
    endpoints:` + zonedEndpoints(zoned{"a", 2, 1}, zoned{"b", 1, 3}),
			want: map[string]int{"a": 100, "b": 300},
		},
		"the last weight of a locality repeated in a level wins": {
			yaml: `
- name: web
  common_lb_config: {locality_weighted_lb_config: {}}
  load_assignment:
    cluster_name: web
    endpoints:` + zonedEndpoints(zoned{"a", 1, 1}, zoned{"b", 1, 1}, zoned{"a", 1, 3}),
			// a's three hosts... two entries of a: 127.0.1.1 and 127.0.3.1.
			want: map[string]int{"a": 300, "b": 100},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, _, _ := newTestManager(t, tc.yaml, withLbPolicies(t))
			if diff := cmp.Diff(tc.want, zoneOf(m.Cluster("web"), 400)); diff != "" {
				t.Errorf("picks per zone (-want +got):\n%s", diff)
			}
		})
	}
}

func TestZoneAwareClusters(t *testing.T) {
	src := `
- name: mesh
  load_assignment:
    cluster_name: mesh
    endpoints:` + zonedEndpoints(zoned{"a", 1, 0}, zoned{"b", 1, 0}, zoned{"c", 1, 0}) + `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:` + zonedEndpoints(zoned{"a", 4, 0}, zoned{"b", 2, 0}, zoned{"c", 2, 0}) + `
- name: small
  load_assignment:
    cluster_name: small
    endpoints:` + zonedEndpoints(zoned{"a", 1, 0}, zoned{"b", 1, 0}) + `
- name: tuned
  common_lb_config: {zone_aware_lb_config: {min_cluster_size: 2, routing_enabled: {value: 0}}}
  load_assignment:
    cluster_name: tuned
    endpoints:` + zonedEndpoints(zoned{"a", 1, 0}, zoned{"b", 1, 0}) + `
- name: typed
  load_balancing_policy: {policies: [{typed_extension_config: {name: lr, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest, locality_lb_config: {zone_aware_lb_config: {min_cluster_size: 2}}}}}]}
  load_assignment:
    cluster_name: typed
    endpoints:` + zonedEndpoints(zoned{"a", 1, 0}, zoned{"b", 1, 0})
	m, store, _ := newTestManager(t, src, withLbPolicies(t), func(o *Options) {
		o.LocalClusterName = "mesh"
		o.Locality = &upstream.Locality{Region: "r", Zone: "a"}
		// Zone routing samples: a well-spread random source.
		o.Rand = rand.New(rand.NewPCG(1, 2)).Uint64
	})
	stat := func(cluster, name string) uint64 { return store.Counter("cluster." + cluster + "." + name).Value() }

	// 1/3 of the proxies are in a, and half of web's hosts: a takes all.
	if diff := cmp.Diff(map[string]int{"a": 60}, zoneOf(m.Cluster("web"), 60)); diff != "" {
		t.Errorf("web picks per zone (-want +got):\n%s", diff)
	}
	if got := stat("web", "lb_zone_routing_all_directly"); got != 60 {
		t.Errorf("lb_zone_routing_all_directly = %d, want 60", got)
	}
	if got := stat("web", "lb_recalculate_zone_structures"); got != 1 {
		t.Errorf("lb_recalculate_zone_structures = %d, want 1", got)
	}
	// Two hosts are fewer than min_cluster_size's default 6.
	if diff := cmp.Diff(map[string]int{"a": 5, "b": 5}, zoneOf(m.Cluster("small"), 10)); diff != "" {
		t.Errorf("small picks per zone (-want +got):\n%s", diff)
	}
	if got := stat("small", "lb_zone_cluster_too_small"); got != 1 {
		t.Errorf("small lb_zone_cluster_too_small = %d, want 1", got)
	}
	// Zone routing applies but routing_enabled 0% of the picks use it.
	if diff := cmp.Diff(map[string]int{"a": 5, "b": 5}, zoneOf(m.Cluster("tuned"), 10)); diff != "" {
		t.Errorf("tuned picks per zone (-want +got):\n%s", diff)
	}
	if got := stat("tuned", "lb_zone_cluster_too_small"); got != 0 {
		t.Errorf("tuned lb_zone_cluster_too_small = %d, want 0", got)
	}
	// A typed policy's locality_lb_config: min_cluster_size 2 lets its
	// two hosts route by zone, all in a (1/3 of the proxies, half of its
	// hosts).
	if diff := cmp.Diff(map[string]int{"a": 10}, zoneOf(m.Cluster("typed"), 10)); diff != "" {
		t.Errorf("typed picks per zone (-want +got):\n%s", diff)
	}
	if got := stat("typed", "lb_zone_routing_all_directly"); got != 10 {
		t.Errorf("typed lb_zone_routing_all_directly = %d, want 10", got)
	}

	// The local cluster grows in a: now 3 of 5 proxies are there, more
	// than a's half of web, so only 5/6 of the picks stay in a. Every
	// zone-aware cluster is rebuilt.
	mesh := m.Cluster("mesh")
	hosts := mesh.Hosts()
	for i := range 2 {
		hosts = append(hosts, &upstream.Host{Address: fmt.Sprintf("127.0.9.%d:80", i+1), Cluster: "mesh", Locality: hosts[0].Locality, Weight: 1})
	}
	mesh.SetHosts([][]*upstream.Host{hosts})
	if got := stat("web", "lb_recalculate_zone_structures"); got != 2 {
		t.Errorf("after the local change lb_recalculate_zone_structures = %d, want 2", got)
	}
	got := zoneOf(m.Cluster("web"), 6000)
	if got["a"] < 4800 || got["a"] > 5200 {
		t.Errorf("after the local change, picks per zone %v: want about 5000 in a", got)
	}
	if stat("web", "lb_zone_routing_sampled") == 0 || stat("web", "lb_zone_routing_cross_zone") == 0 {
		t.Errorf("lb_zone_routing_sampled %d, lb_zone_routing_cross_zone %d: want both counted",
			stat("web", "lb_zone_routing_sampled"), stat("web", "lb_zone_routing_cross_zone"))
	}
}

func TestZoneAwareWithoutLocalCluster(t *testing.T) {
	m, store, _ := newTestManager(t, `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:`+zonedEndpoints(zoned{"a", 4, 0}, zoned{"b", 4, 0}), func(o *Options) {
		o.Locality = &upstream.Locality{Region: "r", Zone: "a"}
	})
	if diff := cmp.Diff(map[string]int{"a": 4, "b": 4}, zoneOf(m.Cluster("web"), 8)); diff != "" {
		t.Errorf("picks per zone (-want +got):\n%s", diff)
	}
	if got := store.Counter("cluster.web.lb_recalculate_zone_structures").Value(); got != 0 {
		t.Errorf("lb_recalculate_zone_structures = %d, want 0", got)
	}
}

// TestLocalityWeightedEDSUpdate checks that an EDS update of one endpoint,
// which updates the balancer from the change, keeps locality-weighted
// balancing.
func TestLocalityWeightedEDSUpdate(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: web
  type: EDS
  common_lb_config: {locality_weighted_lb_config: {}}`)
	c := m.Cluster("web")
	endpoint := func(addr string) *endpointv3.LbEndpoint {
		return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80},
			}}},
		}}}
	}
	a := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{Region: "r", Zone: "a"}, LoadBalancingWeight: wrapperspb.UInt32(1),
		LbEndpoints: []*endpointv3.LbEndpoint{endpoint("127.0.1.1"), endpoint("127.0.1.2")}}
	b := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{Region: "r", Zone: "b"}, LoadBalancingWeight: wrapperspb.UInt32(3),
		LbEndpoints: []*endpointv3.LbEndpoint{endpoint("127.0.2.1")}}
	apply := func() {
		t.Helper()
		p, err := c.EDSHosts(&endpointv3.ClusterLoadAssignment{ClusterName: "web", Endpoints: []*endpointv3.LocalityLbEndpoints{a, b}})
		if err != nil {
			t.Fatal(err)
		}
		c.SetEDSHosts(p)
	}
	apply()
	if diff := cmp.Diff(map[string]int{"a": 100, "b": 300}, zoneOf(c, 400)); diff != "" {
		t.Errorf("picks per zone (-want +got):\n%s", diff)
	}
	// One endpoint more in a: the same messages for the others.
	a.LbEndpoints = append(a.LbEndpoints, endpoint("127.0.1.3"))
	apply()
	if diff := cmp.Diff(map[string]int{"a": 100, "b": 300}, zoneOf(c, 400)); diff != "" {
		t.Errorf("after a one-endpoint update, picks per zone (-want +got):\n%s", diff)
	}
}

// TestLocalityFromTypedForceAndBasis: force_local_zone's min_size (1 when
// unset) supersedes the deprecated force_locality_direct_routing, which
// stands for a min_size of 1; locality_basis HEALTHY_HOSTS_WEIGHT weighs
// the localities.
func TestLocalityFromTypedForceAndBasis(t *testing.T) {
	za := func(z *commonv3.LocalityLbConfig_ZoneAwareLbConfig) *commonv3.LocalityLbConfig {
		return &commonv3.LocalityLbConfig{LocalityConfigSpecifier: &commonv3.LocalityLbConfig_ZoneAwareLbConfig_{ZoneAwareLbConfig: z}}
	}
	for name, tc := range map[string]struct {
		z        *commonv3.LocalityLbConfig_ZoneAwareLbConfig
		force    uint32
		byWeight bool
	}{
		"neither":          {z: &commonv3.LocalityLbConfig_ZoneAwareLbConfig{}},
		"force_local_zone": {z: &commonv3.LocalityLbConfig_ZoneAwareLbConfig{ForceLocalZone: &commonv3.LocalityLbConfig_ZoneAwareLbConfig_ForceLocalZone{}}, force: 1},
		"min_size":         {z: &commonv3.LocalityLbConfig_ZoneAwareLbConfig{ForceLocalZone: &commonv3.LocalityLbConfig_ZoneAwareLbConfig_ForceLocalZone{MinSize: wrapperspb.UInt32(3)}}, force: 3},
		//lint:ignore SA1019 the deprecated field is still honoured, as min_size 1
		"direct routing": {z: &commonv3.LocalityLbConfig_ZoneAwareLbConfig{ForceLocalityDirectRouting: true}, force: 1},
		//lint:ignore SA1019 the deprecated field is still honoured, superseded by force_local_zone
		"both, min_size wins": {z: &commonv3.LocalityLbConfig_ZoneAwareLbConfig{ForceLocalityDirectRouting: true, ForceLocalZone: &commonv3.LocalityLbConfig_ZoneAwareLbConfig_ForceLocalZone{MinSize: wrapperspb.UInt32(4)}}, force: 4},
		"by weight":           {z: &commonv3.LocalityLbConfig_ZoneAwareLbConfig{LocalityBasis: commonv3.LocalityLbConfig_ZoneAwareLbConfig_HEALTHY_HOSTS_WEIGHT}, byWeight: true},
	} {
		l := localityFromTyped(za(tc.z))
		if l.ForceLocalZone != tc.force || l.ByWeight != tc.byWeight {
			t.Errorf("%s: force %d, by weight %v; want %d, %v", name, l.ForceLocalZone, l.ByWeight, tc.force, tc.byWeight)
		}
	}
}
