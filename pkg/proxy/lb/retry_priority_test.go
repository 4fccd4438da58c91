package lb

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestChooseExcluding(t *testing.T) {
	tests := map[string]struct {
		priorities [][]*upstream.Host
		excluded   []bool
		want       map[string]int
	}{
		"P0 tried: all to P1": {
			priorities: [][]*upstream.Host{makeHosts("a", "b"), makeHosts("c")},
			excluded:   []bool{true},
			want:       map[string]int{"c": 100},
		},
		"P1 tried: P0 keeps all": {
			priorities: [][]*upstream.Host{makeHosts("a"), makeHosts("c")},
			excluded:   []bool{false, true},
			want:       map[string]int{"a": 100},
		},
		"P0 tried, P1 and P2 share by availability": {
			// P1 is half healthy: 70% available; P2 fully: 100%; together
			// capped at 100, P1 gets 70 and P2 the remaining 30.
			priorities: [][]*upstream.Host{makeHosts("a"), makeHosts("b", "x!"), makeHosts("c")},
			excluded:   []bool{true},
			want:       map[string]int{"b": 70, "c": 30},
		},
		"every level tried: the cluster's own load": {
			priorities: [][]*upstream.Host{makeHosts("a"), makeHosts("c")},
			excluded:   []bool{true, true},
			want:       map[string]int{"a": 100},
		},
		"nothing excluded": {
			priorities: [][]*upstream.Host{makeHosts("a"), makeHosts("c")},
			excluded:   []bool{},
			want:       map[string]int{"a": 100},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var draw uint64
			b := New(tt.priorities, Config{Rand: func() uint64 { draw++; return draw }})
			got := map[string]int{}
			for range 100 {
				h, _ := b.Pick(&upstream.PickContext{ExcludedPriorities: tt.excluded})
				got[h.Address]++
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("picks = %v; want %v", got, tt.want)
					break
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("picks = %v; want %v", got, tt.want)
			}
		})
	}
}
