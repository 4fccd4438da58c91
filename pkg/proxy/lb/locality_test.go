package lb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// inZone places hosts (makeHosts descriptions) in a zone of region "r"
// with a locality weight.
func inZone(zone string, weight uint32, specs ...string) []*upstream.Host {
	hosts := makeHosts(specs...)
	for _, h := range hosts {
		h.Locality = upstream.Locality{Region: "r", Zone: zone}
		h.LocalityWeight = weight
	}
	return hosts
}

// zoneHosts builds n hosts named <zone>0.. in a zone, the first failed ones
// marked unhealthy.
func zoneHosts(zone string, weight uint32, n, failed int) []*upstream.Host {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf("%s%d", zone, i)
		if i < failed {
			specs[i] += "!"
		}
	}
	return inZone(zone, weight, specs...)
}

// seeded is a deterministic Rand for share tests.
func seeded() func() uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	return r.Uint64
}

// zoneShares picks n times and returns the percentage of picks per zone
// ("<nil>" for no host).
func zoneShares(b *Balancer, n int) map[string]float64 {
	counts := map[string]int{}
	for range n {
		h, _ := b.Pick(nil)
		if h == nil {
			counts["<nil>"]++
			continue
		}
		counts[h.Locality.Zone]++
	}
	out := map[string]float64{}
	for k, v := range counts {
		out[k] = 100 * float64(v) / float64(n)
	}
	return out
}

// approx compares shares to within tolerance percentage points.
func approx(tolerance float64) cmp.Option {
	return cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= tolerance })
}

// TestLocalityWeightedDocumentedTable checks Envoy's documented example:
// localities X (weight 1) and Y (weight 2, fully available), with the
// default overprovisioning factor, as X loses hosts.
func TestLocalityWeightedDocumentedTable(t *testing.T) {
	tests := []struct {
		healthyX int // of 100
		wantX    float64
	}{
		{100, 33}, {70, 33}, {69, 32}, {50, 26}, {25, 15}, {0, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("X %d%% healthy", tc.healthyX), func(t *testing.T) {
			level := append(zoneHosts("X", 1, 100, 100-tc.healthyX), zoneHosts("Y", 2, 100, 0)...)
			b := New([][]*upstream.Host{level}, Config{LocalityWeighted: true, Rand: seeded()})
			got := zoneShares(b, 30000)
			want := map[string]float64{"X": tc.wantX, "Y": 100 - tc.wantX}
			if tc.wantX == 0 {
				delete(want, "X")
			}
			// The table rounds; the schedule is exact to a pick.
			if diff := cmp.Diff(want, got, approx(1)); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEffectiveWeight(t *testing.T) {
	tests := []struct {
		weight          uint32
		eligible, total int
		factor          uint32
		want            float64
	}{
		{weight: 1, eligible: 100, total: 100, factor: 140, want: 1},
		{weight: 1, eligible: 70, total: 100, factor: 140, want: 0.98},
		{weight: 1, eligible: 50, total: 100, factor: 140, want: 0.7},
		{weight: 2, eligible: 1, total: 4, factor: 140, want: 0.7},
		{weight: 5, eligible: 3, total: 4, factor: 100, want: 3.75},
		{weight: 5, eligible: 0, total: 4, factor: 140, want: 0},
		{weight: 5, eligible: 0, total: 0, factor: 140, want: 0},
		{weight: 0, eligible: 4, total: 4, factor: 140, want: 0},
	}
	for _, tc := range tests {
		got := effectiveWeight(tc.weight, tc.eligible, tc.total, tc.factor)
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("effectiveWeight(%d, %d/%d, %d) = %v, want %v", tc.weight, tc.eligible, tc.total, tc.factor, got, tc.want)
		}
	}
}

func TestLocalityWeightedPicks(t *testing.T) {
	tests := map[string]struct {
		priorities [][]*upstream.Host
		cfg        Config
		n          int
		want       map[string]int
	}{
		"weights 1 and 3 interleave localities, then round robin within": {
			priorities: [][]*upstream.Host{append(inZone("a", 1, "a1", "a2"), inZone("b", 3, "b1", "b2", "b3")...)},
			n:          8,
			want:       map[string]int{"a1": 1, "a2": 1, "b1": 2, "b2": 2, "b3": 2},
		},
		"a locality without weight takes no traffic": {
			priorities: [][]*upstream.Host{append(inZone("a", 0, "a1"), inZone("b", 2, "b1")...)},
			n:          10,
			want:       map[string]int{"b1": 10},
		},
		"no locality with weight: the level is balanced as without localities": {
			priorities: [][]*upstream.Host{append(inZone("a", 0, "a1"), inZone("b", 0, "b1")...)},
			n:          10,
			want:       map[string]int{"a1": 5, "b1": 5},
		},
		"weighted locality wholly failed: its weight no longer counts": {
			priorities: [][]*upstream.Host{append(inZone("a", 5, "a1!"), inZone("b", 1, "b1")...)},
			n:          10,
			want:       map[string]int{"b1": 10},
		},
		"degraded hosts are chosen by locality too": {
			// Healthy a1 and b1 carry 70% (2 of 4 hosts x 1.4); the
			// degraded a2 and b2 the rest, by locality weights 1:2.
			priorities: [][]*upstream.Host{append(inZone("a", 1, "a1", "a2~"), inZone("b", 2, "b1", "b2~")...)},
			cfg:        Config{Rand: seeded()},
			n:          30000,
			want:       map[string]int{"a1": 7000, "b1": 14000, "a2": 3000, "b2": 6000},
		},
		"each priority level weighs its own localities": {
			priorities: [][]*upstream.Host{
				append(inZone("a", 1, "a1", "a2!"), inZone("b", 1, "b1!", "b2!")...), // 1/4 healthy: 35%
				append(inZone("a", 1, "p1a"), inZone("b", 4, "p1b")...),
			},
			cfg:  Config{Rand: seeded()},
			n:    10000,
			want: map[string]int{"a1": 3500, "p1a": 1300, "p1b": 5200},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.LocalityWeighted = true
			if cfg.Rand == nil {
				cfg.Rand = draws()
			}
			b := New(tc.priorities, cfg)
			got := map[string]int{}
			for range tc.n {
				h, _ := b.Pick(nil)
				if h == nil {
					got["<nil>"]++
					continue
				}
				got[h.Address]++
			}
			tolerance := cmp.Comparer(func(a, b int) bool { return math.Abs(float64(a-b)) <= float64(tc.n)/100 })
			if diff := cmp.Diff(tc.want, got, tolerance); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLocalityWeightedSequence checks the schedule pick by pick: the
// earliest-deadline-first order of Envoy's locality scheduler.
func TestLocalityWeightedSequence(t *testing.T) {
	hosts := append(append(inZone("a", 1, "a"), inZone("b", 2, "b")...), inZone("c", 3, "c")...)
	b := New([][]*upstream.Host{hosts}, Config{LocalityWeighted: true, Rand: draws()})
	got := picks(12, func(ctx *upstream.PickContext) *upstream.Host { h, _ := b.Pick(ctx); return h })
	// Deadlines 1, 1/2, 1/3 as for host weights 1, 2 and 3.
	want := []string{"c", "b", "c", "a", "b", "c", "c", "b", "c", "c", "a", "b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("picks (-want +got):\n%s", diff)
	}
}

func TestGroupLocalities(t *testing.T) {
	mk := func(region, zone, sub string) *upstream.Host {
		return &upstream.Host{Address: region + "/" + zone + "/" + sub, Locality: upstream.Locality{Region: region, Zone: zone, SubZone: sub}}
	}
	hosts := []*upstream.Host{mk("r2", "a", ""), mk("r1", "b", "x"), mk("r1", "b", ""), mk("r1", "a", "y"), mk("r2", "a", "")}
	names := func(ls localities) []string {
		var out []string
		for _, g := range ls.groups {
			out = append(out, fmt.Sprintf("%s/%s/%s:%d", g.locality.Region, g.locality.Zone, g.locality.SubZone, len(g.all)))
		}
		return out
	}
	tests := map[string]struct {
		local        *upstream.Locality
		want         []string
		wantHasLocal bool
	}{
		"sorted by region, zone and sub-zone": {
			want: []string{"r1/a/y:1", "r1/b/:1", "r1/b/x:1", "r2/a/:2"},
		},
		"the local locality first": {
			local:        &upstream.Locality{Region: "r1", Zone: "b", SubZone: "x"},
			want:         []string{"r1/b/x:1", "r1/a/y:1", "r1/b/:1", "r2/a/:2"},
			wantHasLocal: true,
		},
		"a local locality without hosts changes nothing": {
			local: &upstream.Locality{Region: "r9"},
			want:  []string{"r1/a/y:1", "r1/b/:1", "r1/b/x:1", "r2/a/:2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ls := groupLocalities(hosts, tc.local, nil)
			if diff := cmp.Diff(tc.want, names(ls)); diff != "" {
				t.Errorf("localities (-want +got):\n%s", diff)
			}
			if ls.hasLocal != tc.wantHasLocal {
				t.Errorf("hasLocal = %v, want %v", ls.hasLocal, tc.wantHasLocal)
			}
		})
	}
}

func TestLocalityPickDoesNotAllocate(t *testing.T) {
	b := New([][]*upstream.Host{append(inZone("a", 1, "a1", "a2"), inZone("b", 3, "b1:2", "b2")...)}, Config{LocalityWeighted: true})
	if allocs := testing.AllocsPerRun(100, func() { b.Pick(nil) }); allocs != 0 {
		t.Errorf("Pick allocates %v times per call", allocs)
	}
}
