package lb

import (
	"slices"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// spread builds hosts over zones, n per zone, the zones in order: spread(
// "a", 2, "b", 4) is two hosts in a and four in b.
func spread(args ...any) []*upstream.Host {
	var out []*upstream.Host
	for i := 0; i < len(args); i += 2 {
		out = append(out, zoneHosts(args[i].(string), 1, args[i+1].(int), 0)...)
	}
	return out
}

// weighted gives the first host of hosts load_balancing_weight w, the
// others 1.
func weighted(hosts []*upstream.Host, w uint32) []*upstream.Host {
	for i, h := range hosts {
		h.Weight = 1
		if i == 0 {
			h.Weight = w
		}
	}
	return hosts
}

// localZone is the proxy's locality in these tests: zone a of region r.
var localZone = &upstream.Locality{Region: "r", Zone: "a"}

// newZoneStats creates the lb stats in a fresh store.
func newZoneStats() (*Stats, *stats.Store) {
	store := stats.NewStore()
	return NewStats(store.Scope(""), false), store
}

// counters reads the non-zero lb counters of a store.
func counters(store *stats.Store) map[string]uint64 {
	out := map[string]uint64{}
	for _, name := range store.CounterNames() {
		if v := store.Counter(name).Value(); v != 0 {
			out[name] = v
		}
	}
	return out
}

func TestZoneRoutingStructures(t *testing.T) {
	tests := map[string]struct {
		local, upstream []*upstream.Host
		minSize         uint64
		force           uint32 // ForceLocalZoneMinSize
		byWeight        bool
		want            *zoneRouting // nil: no zone routing
		wantStats       map[string]uint64
	}{
		// Envoy's example: local 40/40/20%, upstream 25/50/25%. 62.5% of
		// the picks stay local; the rest cross over to b and c by their
		// spare capacity, 10% and 5%.
		"residual capacity": {
			local:     spread("a", 2, "b", 2, "c", 1),
			upstream:  spread("a", 2, "b", 4, "c", 2),
			want:      &zoneRouting{localPercent: 6250, residual: []uint64{0, 1000, 1500}},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		// "If local percentage is 20% and upstream is 10%, we can route
		// only 50% of requests directly."
		"half the local picks stay local": {
			local:     spread("a", 1, "b", 4),
			upstream:  spread("a", 1, "b", 9),
			want:      &zoneRouting{localPercent: 5000, residual: []uint64{0, 1000}},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"the local zone has the capacity: all picks stay local": {
			local:     spread("a", 1, "b", 1, "c", 1),
			upstream:  spread("a", 4, "b", 2, "c", 2),
			want:      &zoneRouting{direct: true},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"no upstream host in the local zone: every pick crosses": {
			local:     spread("a", 1, "b", 1, "c", 2),
			upstream:  spread("b", 3, "c", 3),
			want:      &zoneRouting{residual: []uint64{2500, 2500}},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"too few healthy upstream hosts": {
			local:     spread("a", 1, "b", 1),
			upstream:  spread("a", 2, "b", 3),
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1, "lb_zone_cluster_too_small": 1},
		},
		"min_cluster_size lowered": {
			local:     spread("a", 1, "b", 1),
			upstream:  spread("a", 2, "b", 3),
			minSize:   5,
			want:      &zoneRouting{localPercent: 8000, residual: []uint64{0, 1000}},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"one upstream locality": {
			local:     spread("a", 1, "b", 1),
			upstream:  spread("a", 8),
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"one local locality": {
			local:     spread("a", 3),
			upstream:  spread("a", 4, "b", 4),
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		// force_local_zone: the local zone takes every pick once it has
		// min_size healthy hosts, whatever the shares ("half the local
		// picks stay local" without it).
		"force_local_zone": {
			local:     spread("a", 1, "b", 4),
			upstream:  spread("a", 1, "b", 9),
			force:     1,
			want:      &zoneRouting{direct: true},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"force_local_zone below its min_size: the shares again": {
			local:     spread("a", 1, "b", 4),
			upstream:  spread("a", 1, "b", 9),
			force:     2,
			want:      &zoneRouting{localPercent: 5000, residual: []uint64{0, 1000}},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		// Forced, zone routing applies with a local cluster in one
		// locality too.
		"force_local_zone with one local locality": {
			local:     spread("a", 3),
			upstream:  spread("a", 4, "b", 4),
			force:     1,
			want:      &zoneRouting{direct: true},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"force_local_zone without upstream hosts in the local zone": {
			local:     spread("a", 1, "b", 1, "c", 2),
			upstream:  spread("b", 3, "c", 3),
			force:     1,
			want:      &zoneRouting{residual: []uint64{2500, 2500}},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		// locality_basis HEALTHY_HOSTS_WEIGHT: a's one host of weight 9
		// is 50% of the upstream's weight (10% of its hosts), as much as
		// a's share of the local cluster: every pick stays local.
		"locality_basis HEALTHY_HOSTS_WEIGHT": {
			local:     spread("a", 1, "b", 1),
			upstream:  weighted(spread("a", 1, "b", 9), 9),
			byWeight:  true,
			want:      &zoneRouting{direct: true},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"locality_basis HEALTHY_HOSTS_NUM, the same hosts": {
			local:     spread("a", 1, "b", 1),
			upstream:  weighted(spread("a", 1, "b", 9), 9),
			want:      &zoneRouting{localPercent: 2000, residual: []uint64{0, 4000}},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"the local cluster has no host in the proxy's zone": {
			local:     spread("b", 1, "c", 1),
			upstream:  spread("a", 4, "b", 4),
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1, "lb_local_cluster_not_ok": 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st, store := newZoneStats()
			minSize := tc.minSize
			if minSize == 0 {
				minSize = DefaultMinClusterSize
			}
			b := New([][]*upstream.Host{tc.upstream}, Config{
				Local: localZone,
				Zone: &ZoneConfig{LocalHosts: tc.local, RoutingEnabled: 100, MinClusterSize: minSize,
					ForceLocalZoneMinSize: tc.force, ByWeight: tc.byWeight},
				Stats: st,
			})
			var got *zoneRouting
			if b.zone != nil {
				got = &zoneRouting{direct: b.zone.direct, localPercent: b.zone.localPercent, residual: b.zone.residual}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(zoneRouting{})); diff != "" {
				t.Errorf("zone routing (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStats, counters(store)); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestZoneRoutingPicks(t *testing.T) {
	const n = 40000
	tests := map[string]struct {
		local, upstream []*upstream.Host
		cfg             Config
		runtime         map[string]string
		want            map[string]float64 // percentage of picks per zone
		wantStats       map[string]uint64
	}{
		"residual capacity spreads the cross-zone picks": {
			local:    spread("a", 2, "b", 2, "c", 1),
			upstream: spread("a", 2, "b", 4, "c", 2),
			want:     map[string]float64{"a": 62.5, "b": 25, "c": 12.5},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1,
				"lb_zone_routing_sampled": n * 625 / 1000, "lb_zone_routing_cross_zone": n * 375 / 1000},
		},
		"all direct": {
			local:     spread("a", 1, "b", 1, "c", 1),
			upstream:  spread("a", 4, "b", 2, "c", 2),
			want:      map[string]float64{"a": 100},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1, "lb_zone_routing_all_directly": n},
		},
		"routing enabled for 0% of the picks": {
			local:     spread("a", 1, "b", 1, "c", 1),
			upstream:  spread("a", 4, "b", 2, "c", 2),
			cfg:       Config{Zone: &ZoneConfig{RoutingEnabled: 0}},
			want:      map[string]float64{"a": 50, "b": 25, "c": 25},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1},
		},
		"runtime upstream.zone_routing.enabled at 50%": {
			local:    spread("a", 1, "b", 1, "c", 1),
			upstream: spread("a", 4, "b", 2, "c", 2),
			runtime:  map[string]string{RuntimeZoneRoutingEnabled: "50"},
			// Half the picks stay local; the other half spread by host.
			want:      map[string]float64{"a": 75, "b": 12.5, "c": 12.5},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1, "lb_zone_routing_all_directly": n / 2},
		},
		"runtime upstream.zone_routing.min_cluster_size above the cluster": {
			local:     spread("a", 1, "b", 1, "c", 1),
			upstream:  spread("a", 4, "b", 2, "c", 2),
			runtime:   map[string]string{RuntimeMinClusterSize: "9"},
			want:      map[string]float64{"a": 50, "b": 25, "c": 25},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1, "lb_zone_cluster_too_small": 1},
		},
		"the local cluster in panic: no zone routing": {
			local:     append(spread("a", 1, "b", 1), zoneHosts("c", 1, 4, 4)...),
			upstream:  spread("a", 4, "b", 2, "c", 2),
			cfg:       Config{PanicThreshold: DefaultPanicThreshold},
			want:      map[string]float64{"a": 50, "b": 25, "c": 25},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1, "lb_local_cluster_not_ok": n},
		},
		"the local cluster in panic with fail_traffic_on_panic": {
			local:     append(spread("a", 1, "b", 1), zoneHosts("c", 1, 4, 4)...),
			upstream:  spread("a", 4, "b", 2, "c", 2),
			cfg:       Config{PanicThreshold: DefaultPanicThreshold, FailTrafficOnPanic: true},
			want:      map[string]float64{"<nil>": 100},
			wantStats: map[string]uint64{"lb_recalculate_zone_structures": 1, "lb_local_cluster_not_ok": n},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st, store := newZoneStats()
			cfg := tc.cfg
			zone := ZoneConfig{RoutingEnabled: 100, MinClusterSize: DefaultMinClusterSize}
			if cfg.Zone != nil {
				zone.RoutingEnabled = cfg.Zone.RoutingEnabled
			}
			zone.LocalHosts = tc.local
			if tc.runtime != nil {
				rt, err := runtime.New(&bootstrapv3.LayeredRuntime{}, runtime.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := rt.Modify(tc.runtime); err != nil {
					t.Fatal(err)
				}
				zone.Runtime = rt.Snapshot
			}
			cfg.Zone, cfg.Local, cfg.Stats, cfg.Rand = &zone, localZone, st, seeded()
			b := New([][]*upstream.Host{tc.upstream}, cfg)
			if diff := cmp.Diff(tc.want, zoneShares(b, n), approx(1)); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
			tolerance := cmp.Comparer(func(a, b uint64) bool { return a-b+n/100 <= n/50 })
			if diff := cmp.Diff(tc.wantStats, counters(store), tolerance); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

// TestZoneRoutingOnlyAtPriorityZero checks that lower priorities are
// balanced without regard to zones, as in Envoy.
func TestZoneRoutingOnlyAtPriorityZero(t *testing.T) {
	p0 := zoneHosts("a", 1, 10, 10) // all failed: P1 takes everything
	p1 := spread("a", 4, "b", 4)
	b := New([][]*upstream.Host{p0, p1}, Config{
		Local: localZone,
		Zone:  &ZoneConfig{LocalHosts: spread("a", 1, "b", 3), RoutingEnabled: 100, MinClusterSize: 1},
		Rand:  seeded(),
	})
	if diff := cmp.Diff(map[string]float64{"a": 50, "b": 50}, zoneShares(b, 10000), approx(1)); diff != "" {
		t.Errorf("shares (-want +got):\n%s", diff)
	}
}

// TestFailTrafficOnPanic checks that a level in panic fails its picks
// instead of using all its hosts.
func TestFailTrafficOnPanic(t *testing.T) {
	b := New([][]*upstream.Host{makeHosts("a", "b!", "c!")}, Config{PanicThreshold: DefaultPanicThreshold, FailTrafficOnPanic: true})
	for range 3 {
		if h, panicked := b.Pick(nil); h != nil || !panicked {
			t.Fatalf("Pick() = %v, %v; want no host, in panic", h, panicked)
		}
	}
}

func TestZonePickDoesNotAllocate(t *testing.T) {
	b := New([][]*upstream.Host{spread("a", 2, "b", 4, "c", 2)}, Config{
		Local: localZone,
		Zone:  &ZoneConfig{LocalHosts: spread("a", 2, "b", 2, "c", 1), RoutingEnabled: 100, MinClusterSize: 6},
	})
	if b.zone == nil {
		t.Fatal("no zone routing")
	}
	if allocs := testing.AllocsPerRun(100, func() { b.Pick(nil) }); allocs != 0 {
		t.Errorf("Pick allocates %v times per call", allocs)
	}
}

// TestZoneRoutingAcrossUpdates checks that an update from a change keeps
// zone routing and locality weighting (both are built again), and that,
// as in Envoy, lb_recalculate_zone_structures counts a change of priority
// 0, or one not known, but not a change of another level only.
func TestZoneRoutingAcrossUpdates(t *testing.T) {
	st, store := newZoneStats()
	recalculated := func() uint64 { return store.Counter("lb_recalculate_zone_structures").Value() }
	cfg := func() Config {
		return Config{
			Local: localZone, Stats: st, Rand: seeded(),
			Zone: &ZoneConfig{LocalHosts: spread("a", 1, "b", 1, "c", 1), RoutingEnabled: 100, MinClusterSize: 1},
		}
	}
	p0, p1 := spread("a", 4, "b", 2, "c", 2), zoneHosts("d", 1, 2, 0)
	for _, h := range p1 {
		h.Priority = 1
	}
	b := New([][]*upstream.Host{p0, p1}, cfg())
	if got := recalculated(); got != 1 {
		t.Fatalf("lb_recalculate_zone_structures = %d after the first build, want 1", got)
	}
	extra := zoneHosts("e", 1, 1, 0)[0]
	extra.Priority = 1
	b = b.Update([][]*upstream.Host{p0, append(slices.Clone(p1), extra)}, &Change{Added: []*upstream.Host{extra}}, cfg())
	if got := recalculated(); got != 1 {
		t.Errorf("lb_recalculate_zone_structures = %d after a change of priority 1 only, want 1", got)
	}
	if diff := cmp.Diff(map[string]float64{"a": 100}, zoneShares(b, 1000), approx(1)); diff != "" {
		t.Errorf("after the update, shares (-want +got):\n%s", diff)
	}
	gone := p0[len(p0)-1]
	b = b.Update([][]*upstream.Host{p0[:len(p0)-1], append(slices.Clone(p1), extra)}, &Change{Removed: []*upstream.Host{gone}}, cfg())
	if got := recalculated(); got != 2 {
		t.Errorf("lb_recalculate_zone_structures = %d after a change of priority 0, want 2", got)
	}
	b.Update([][]*upstream.Host{p0[:len(p0)-1], append(slices.Clone(p1), extra)}, nil, cfg())
	if got := recalculated(); got != 3 {
		t.Errorf("lb_recalculate_zone_structures = %d after a change not known (health, the local cluster), want 3", got)
	}

	// Locality weighting: a update from a change keeps the schedule.
	lw := Config{LocalityWeighted: true, Rand: seeded(), PanicThreshold: DefaultPanicThreshold}
	hosts := slices.Concat(inZone("a", 1, "a1"), inZone("b", 3, "b1"))
	wb := New([][]*upstream.Host{hosts}, lw)
	added := inZone("b", 3, "b2")[0]
	wb = wb.Update([][]*upstream.Host{append(slices.Clone(hosts), added)}, &Change{Added: []*upstream.Host{added}}, lw)
	if diff := cmp.Diff(map[string]float64{"a": 25, "b": 75}, zoneShares(wb, 4000), approx(3)); diff != "" {
		t.Errorf("locality weights after an update, shares (-want +got):\n%s", diff)
	}
}

// TestForceLocalZoneRuntime: the runtime key
// upstream.zone_routing.force_local_zone.min_size, above 0, forces
// local-zone routing with its minimum, over the configuration's (or
// without one), as Envoy reads it.
func TestForceLocalZoneRuntime(t *testing.T) {
	for name, tc := range map[string]struct {
		rt     string
		config uint32
		direct bool
	}{
		"runtime alone":                  {rt: "1", direct: true},
		"runtime above the zone's hosts": {rt: "2", config: 1},
		"runtime 0: the configuration":   {rt: "0", config: 1, direct: true},
	} {
		rt, err := runtime.New(&bootstrapv3.LayeredRuntime{}, runtime.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Modify(map[string]string{RuntimeForceLocalZoneMinSize: tc.rt}); err != nil {
			t.Fatal(err)
		}
		b := New([][]*upstream.Host{spread("a", 1, "b", 9)}, Config{
			Local: localZone,
			Zone: &ZoneConfig{LocalHosts: spread("a", 1, "b", 4), RoutingEnabled: 100, MinClusterSize: DefaultMinClusterSize,
				ForceLocalZoneMinSize: tc.config, Runtime: rt.Snapshot},
		})
		if b.zone == nil || b.zone.direct != tc.direct {
			t.Errorf("%s: zone routing %+v, want direct %v", name, b.zone, tc.direct)
		}
	}
}
