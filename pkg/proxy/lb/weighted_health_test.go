package lb

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestWeightedPriorityHealth checks weighted_priority_health: a level's
// health is the share of its hosts' weights that are healthy (or
// degraded), scaled by the overprovisioning factor, while panic still
// counts hosts, as Envoy's LoadBalancerBase does.
func TestWeightedPriorityHealth(t *testing.T) {
	tests := map[string]struct {
		levels      [][]*upstream.Host
		weighted    bool
		factor      uint32
		threshold   uint32
		wantHealthy []uint32
		wantDegr    []uint32
		wantPanic   []bool
	}{
		"by count: one of two hosts healthy spills 30 to P1": {
			levels:      [][]*upstream.Host{makeHosts("a:3", "b:1!"), makeHosts("c")},
			wantHealthy: []uint32{70, 30}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"by weight: the healthy host carries 3 of 4, P0 keeps everything": {
			// 140 * 3/4 = 105, capped at 100.
			levels:      [][]*upstream.Host{makeHosts("a:3", "b:1!"), makeHosts("c")},
			weighted:    true,
			wantHealthy: []uint32{100, 0}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"by weight: the healthy host carries 1 of 4": {
			// 140 * 1/4 = 35; P1 takes the remaining 65.
			levels:      [][]*upstream.Host{makeHosts("a:1", "b:3!"), makeHosts("c")},
			weighted:    true,
			wantHealthy: []uint32{35, 65}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"by weight with factor 100": {
			levels:      [][]*upstream.Host{makeHosts("a:3", "b:1!"), makeHosts("c")},
			weighted:    true,
			factor:      100,
			wantHealthy: []uint32{75, 25}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"by weight: degraded hosts by their weight too": {
			// Healthy 140 * 1/5 = 28, degraded 140 * 4/5 = 112 -> 100;
			// normalized 100: 28 healthy, 72 degraded.
			levels:      [][]*upstream.Host{makeHosts("a:1", "b:4~")},
			weighted:    true,
			wantHealthy: []uint32{28}, wantDegr: []uint32{72}, wantPanic: []bool{false},
		},
		"by weight: panic still counts hosts": {
			// Half the hosts are healthy (not below 50%), though only a
			// quarter of the weight: no panic.
			levels:      [][]*upstream.Host{makeHosts("a:1", "b:3!")},
			weighted:    true,
			threshold:   DefaultPanicThreshold,
			wantHealthy: []uint32{100}, wantDegr: []uint32{0}, wantPanic: []bool{false},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := New(tc.levels, Config{Rand: draws(), OverprovisioningFactor: tc.factor, PanicThreshold: tc.threshold, WeightedPriorityHealth: tc.weighted})
			healthy, degraded, panic := b.Loads()
			if diff := cmp.Diff(tc.wantHealthy, healthy); diff != "" {
				t.Errorf("healthy (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDegr, degraded); diff != "" {
				t.Errorf("degraded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPanic, panic); diff != "" {
				t.Errorf("panic (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPriorityLoadWeighted checks an aggregate cluster's linearized
// levels: a level from a cluster with weighted_priority_health is
// available by its weights, one without by its counts.
func TestPriorityLoadWeighted(t *testing.T) {
	levels := []LevelHosts{
		{Total: 2, Healthy: 1, Weighted: true, TotalWeight: 4, HealthyWeight: 1},
		{Total: 2, Healthy: 1},
	}
	healthy, _ := NewPriorityLoad(levels, 0).Loads()
	// 140 * 1/4 = 35, then 140 * 1/2 = 70 of the remaining 65.
	if diff := cmp.Diff([]uint32{35, 65}, healthy); diff != "" {
		t.Errorf("healthy (-want +got):\n%s", diff)
	}
}
