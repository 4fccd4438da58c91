package lb

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestComputeLoads(t *testing.T) {
	tests := map[string]struct {
		levels      []levelCounts
		factor      uint32
		threshold   uint32
		wantHealthy []uint32
		wantDegr    []uint32
		wantPanic   []bool
	}{
		"one healthy level": {
			levels:      []levelCounts{{total: 3, healthy: 3}},
			wantHealthy: []uint32{100}, wantDegr: []uint32{0}, wantPanic: []bool{false},
		},
		"overprovisioning keeps a level whole at 3 of 4 healthy": {
			// 140 * 3/4 = 105, capped at 100.
			levels:      []levelCounts{{total: 4, healthy: 3}, {total: 2, healthy: 2}},
			wantHealthy: []uint32{100, 0}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"spill-over to the next priority": {
			// P0 health 140 * 1/2 = 70; P1 takes the remaining 30.
			levels:      []levelCounts{{total: 2, healthy: 1}, {total: 2, healthy: 2}},
			wantHealthy: []uint32{70, 30}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"spill-over skips an empty priority": {
			levels:      []levelCounts{{total: 10, healthy: 5}, {}, {total: 1, healthy: 1}},
			wantHealthy: []uint32{70, 0, 30}, wantDegr: []uint32{0, 0, 0}, wantPanic: []bool{false, false, false},
		},
		"degraded hosts take what healthy ones cannot": {
			levels:      []levelCounts{{total: 4, healthy: 2, degraded: 2}},
			wantHealthy: []uint32{70}, wantDegr: []uint32{30}, wantPanic: []bool{false},
		},
		"Envoy's worked example, rounding to the first healthy level": {
			// Health 10/20/10 and degraded 20/10/0 (14 hosts per level
			// with factor 140) give 16/28/14 healthy and 28/14/0
			// degraded; panic is off to show the distribution.
			levels:      []levelCounts{{total: 14, healthy: 1, degraded: 2}, {total: 14, healthy: 2, degraded: 1}, {total: 14, healthy: 1}},
			wantHealthy: []uint32{16, 28, 14}, wantDegr: []uint32{28, 14, 0}, wantPanic: []bool{false, false, false},
		},
		"a level below the panic threshold panics": {
			// Total availability 70+35 = 105 is 100: never panic then.
			levels:      []levelCounts{{total: 2, healthy: 1}, {total: 4, healthy: 1}},
			threshold:   DefaultPanicThreshold,
			wantHealthy: []uint32{70, 30}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"one level in panic beside a partly available one": {
			// P0 35 (1 of 4), P1 42 (3 of 10): 77 in all; P0 at 25% panics,
			// P1 at 30% too, so the load follows the host counts.
			levels:      []levelCounts{{total: 4, healthy: 1}, {total: 10, healthy: 3}},
			threshold:   DefaultPanicThreshold,
			wantHealthy: []uint32{29, 71}, wantDegr: []uint32{0, 0}, wantPanic: []bool{true, true},
		},
		"a panicking level keeps its share when another is not in panic": {
			// P0 2 of 10 healthy: 28, in panic; P1 5 of 10: 70, not in
			// panic. 98 in all: P0 gets 28 and the rounding, P1 71.
			levels:      []levelCounts{{total: 10, healthy: 2}, {total: 10, healthy: 5}},
			threshold:   DefaultPanicThreshold,
			wantHealthy: []uint32{29, 71}, wantDegr: []uint32{0, 0}, wantPanic: []bool{true, false},
		},
		"every host failed: total panic over all hosts": {
			levels:      []levelCounts{{total: 3}},
			threshold:   DefaultPanicThreshold,
			wantHealthy: []uint32{100}, wantDegr: []uint32{0}, wantPanic: []bool{true},
		},
		"every host failed and panic off": {
			levels:      []levelCounts{{total: 3}, {total: 1}},
			wantHealthy: []uint32{100, 0}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
		"no host at all": {
			levels:      []levelCounts{{}},
			threshold:   DefaultPanicThreshold,
			wantHealthy: []uint32{100}, wantDegr: []uint32{0}, wantPanic: []bool{true},
		},
		"factor 100 gives no headroom": {
			levels:      []levelCounts{{total: 4, healthy: 3}, {total: 1, healthy: 1}},
			factor:      100,
			wantHealthy: []uint32{75, 25}, wantDegr: []uint32{0, 0}, wantPanic: []bool{false, false},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			factor := tc.factor
			if factor == 0 {
				factor = DefaultOverprovisioningFactor
			}
			got := computeLoads(tc.levels, factor, tc.threshold)
			if diff := cmp.Diff(tc.wantHealthy, got.healthy); diff != "" {
				t.Errorf("healthy loads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDegr, got.degraded); diff != "" {
				t.Errorf("degraded loads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPanic, got.panic); diff != "" {
				t.Errorf("panic (-want +got):\n%s", diff)
			}
			var sum uint32
			for i := range got.healthy {
				sum += got.healthy[i] + got.degraded[i]
			}
			if sum != 100 {
				t.Errorf("loads add up to %d, want 100", sum)
			}
		})
	}
}

// draws returns a Rand that yields 0, 1, 2... so that 100 picks cover every
// point of the priority choice exactly once. The first draw is the seed.
func draws() func() uint64 {
	var n uint64
	return func() uint64 {
		v := n
		n++
		return v
	}
}

func TestBalancerPick(t *testing.T) {
	tests := map[string]struct {
		priorities [][]*upstream.Host
		cfg        Config
		n          int
		want       map[string]int
		wantPanic  int
	}{
		"failed hosts are out of rotation": {
			priorities: [][]*upstream.Host{makeHosts("a", "b!", "c")},
			n:          100,
			want:       map[string]int{"a": 50, "c": 50},
		},
		"spill-over 70/30 to the second priority": {
			priorities: [][]*upstream.Host{makeHosts("a", "b!"), makeHosts("c", "d")},
			n:          100,
			want:       map[string]int{"a": 70, "c": 15, "d": 15},
		},
		"weights apply within a priority": {
			priorities: [][]*upstream.Host{makeHosts("a:1", "b:3")},
			n:          100,
			want:       map[string]int{"a": 25, "b": 75},
		},
		"degraded hosts get the remainder": {
			priorities: [][]*upstream.Host{makeHosts("a", "b", "c~", "d~")},
			n:          100,
			want:       map[string]int{"a": 35, "b": 35, "c": 15, "d": 15},
		},
		"panic balances over every host": {
			priorities: [][]*upstream.Host{makeHosts("a", "b!", "c!")},
			cfg:        Config{PanicThreshold: DefaultPanicThreshold},
			n:          99,
			want:       map[string]int{"a": 33, "b": 33, "c": 33},
			wantPanic:  99,
		},
		"without panic only the healthy host is used": {
			priorities: [][]*upstream.Host{makeHosts("a", "b!", "c!")},
			n:          30,
			want:       map[string]int{"a": 30},
		},
		"no healthy host and no panic": {
			priorities: [][]*upstream.Host{makeHosts("a!", "b!")},
			n:          5,
			want:       map[string]int{"<nil>": 5},
		},
		"empty cluster": {
			priorities: [][]*upstream.Host{{}},
			cfg:        Config{PanicThreshold: DefaultPanicThreshold},
			n:          3,
			want:       map[string]int{"<nil>": 3},
			wantPanic:  3,
		},
		"no priorities": {
			n:    2,
			want: map[string]int{"<nil>": 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Rand = draws()
			b := New(tc.priorities, cfg)
			got := map[string]int{}
			var panics int
			for range tc.n {
				h, panicked := b.Pick(nil)
				if panicked {
					panics++
				}
				if h == nil {
					got["<nil>"]++
					continue
				}
				got[h.Address]++
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
			if panics != tc.wantPanic {
				t.Errorf("panicked picks = %d, want %d", panics, tc.wantPanic)
			}
		})
	}
}

// TestBalancerPicker checks that a custom policy is used for every host
// source of every level.
func TestBalancerPicker(t *testing.T) {
	var built [][]string
	first := func(hosts []*upstream.Host, _ uint64) Picker {
		var names []string
		for _, h := range hosts {
			names = append(names, h.Address)
		}
		built = append(built, names)
		return firstPicker{hosts[0]}
	}
	b := New([][]*upstream.Host{makeHosts("a!", "b", "c~")}, Config{NewPicker: first, Rand: draws()})
	want := [][]string{{"a", "b", "c"}, {"b"}, {"c"}}
	if diff := cmp.Diff(want, built); diff != "" {
		t.Errorf("pickers built for (-want +got):\n%s", diff)
	}
	if h, _ := b.Pick(nil); h == nil || h.Address != "b" {
		t.Errorf("Pick() = %v, want b", h)
	}
}

type firstPicker struct{ h *upstream.Host }

func (p firstPicker) Pick(*upstream.PickContext) *upstream.Host { return p.h }

func TestBalancerLoads(t *testing.T) {
	b := New([][]*upstream.Host{makeHosts("a", "b!"), makeHosts("c")}, Config{Rand: draws()})
	healthy, degraded, panic := b.Loads()
	if diff := cmp.Diff([]uint32{70, 30}, healthy); diff != "" {
		t.Errorf("healthy (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint32{0, 0}, degraded); diff != "" {
		t.Errorf("degraded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false}, panic); diff != "" {
		t.Errorf("panic (-want +got):\n%s", diff)
	}
}
