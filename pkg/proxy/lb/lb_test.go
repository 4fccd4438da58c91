package lb

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// makeHosts builds hosts from compact descriptions: "name" or
// "name:weight", with an optional "!" suffix for a failed host and "~"
// for a degraded one.
func makeHosts(specs ...string) []*upstream.Host {
	hosts := make([]*upstream.Host, len(specs))
	for i, s := range specs {
		h := &upstream.Host{Weight: 1}
		switch {
		case strings.HasSuffix(s, "!"):
			h.ConfigHealth = corev3.HealthStatus_UNHEALTHY
			s = strings.TrimSuffix(s, "!")
		case strings.HasSuffix(s, "~"):
			h.ConfigHealth = corev3.HealthStatus_DEGRADED
			s = strings.TrimSuffix(s, "~")
		}
		name, weight, ok := strings.Cut(s, ":")
		if ok {
			var w uint32
			if _, err := fmt.Sscan(weight, &w); err != nil {
				panic(err)
			}
			h.Weight = w
		}
		h.Address = name
		hosts[i] = h
	}
	return hosts
}

// picks returns the addresses of n successive picks.
func picks(n int, pick func(*upstream.PickContext) *upstream.Host) []string {
	out := make([]string, n)
	for i := range out {
		if h := pick(nil); h != nil {
			out[i] = h.Address
		} else {
			out[i] = "<nil>"
		}
	}
	return out
}

func TestRoundRobinSequences(t *testing.T) {
	tests := map[string]struct {
		hosts []string
		seed  uint64
		want  string
	}{
		"single host": {
			hosts: []string{"a:7"},
			want:  "a a a",
		},
		"equal weights cycle in order": {
			hosts: []string{"a", "b", "c"},
			want:  "a b c a b c a",
		},
		"equal weights above one are plain round robin too": {
			hosts: []string{"a:5", "b:5"},
			want:  "a b a b",
		},
		"seed moves the start": {
			hosts: []string{"a", "b", "c"},
			seed:  4,
			want:  "b c a b",
		},
		"weights 1 2 3": {
			// Deadlines 1, 1/2, 1/3: c(1/3) b(1/2) c(2/3), then a, b and c
			// are all due at 1 and go in the order they were queued. In
			// the second cycle c's deadline, three float64 steps of 1/3
			// past 1, is 1.9999999999999998: c comes before a and b, as
			// with Envoy's doubles.
			hosts: []string{"a:1", "b:2", "c:3"},
			want:  "c b c a b c c b c c a b",
		},
		"weights 3 1": {
			// a is due at 1/3, 2/3 and 1, where b, queued first, wins
			// the tie; a's next three steps end just below 2, so a goes
			// three times and once more before b.
			hosts: []string{"a:3", "b:1"},
			want:  "a a b a a a a b",
		},
		"weighted seed starts later in the cycle": {
			hosts: []string{"a:1", "b:2", "c:3"},
			seed:  6 + 2, // a whole cycle and two picks
			want:  "c a b c c b",
		},
		"weights 1 and 100": {
			hosts: []string{"a:1", "b:100"},
			want:  strings.TrimSpace(strings.Repeat("b ", 99)) + " a b",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rr := NewRoundRobin(makeHosts(tc.hosts...), tc.seed)
			want := strings.Fields(tc.want)
			if diff := cmp.Diff(want, picks(len(want), rr.Pick)); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundRobinShares checks the long-run shares of the weighted
// schedule: each host gets exactly its weight per cycle of total weight.
func TestRoundRobinShares(t *testing.T) {
	tests := map[string]struct {
		hosts  []string
		cycles int
		want   map[string]int
	}{
		"1 2 3":    {hosts: []string{"a:1", "b:2", "c:3"}, cycles: 50, want: map[string]int{"a": 50, "b": 100, "c": 150}},
		"10 20 70": {hosts: []string{"a:10", "b:20", "c:70"}, cycles: 10, want: map[string]int{"a": 100, "b": 200, "c": 700}},
		"equal":    {hosts: []string{"a", "b", "c", "d"}, cycles: 25, want: map[string]int{"a": 25, "b": 25, "c": 25, "d": 25}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hosts := makeHosts(tc.hosts...)
			var cycle int
			for _, h := range hosts {
				cycle += int(h.Weight)
			}
			rr := NewRoundRobin(hosts, 0)
			got := map[string]int{}
			for _, a := range picks(cycle*tc.cycles, rr.Pick) {
				got[a]++
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundRobinConcurrent picks from many goroutines: every pick is one
// of the hosts and the shares stay exact (run with -race to check the
// locking of the weighted schedule).
func TestRoundRobinConcurrent(t *testing.T) {
	for name, specs := range map[string][]string{
		"weighted":   {"a:1", "b:3"},
		"unweighted": {"a", "b"},
	} {
		t.Run(name, func(t *testing.T) {
			hosts := makeHosts(specs...)
			rr := NewRoundRobin(hosts, 0)
			const workers, each = 8, 400
			counts := make([]map[string]int, workers)
			var wg sync.WaitGroup
			for w := range workers {
				counts[w] = map[string]int{}
				wg.Go(func() {
					for range each {
						counts[w][rr.Pick(nil).Address]++
					}
				})
			}
			wg.Wait()
			total := map[string]int{}
			for _, c := range counts {
				for k, v := range c {
					total[k] += v
				}
			}
			var weights int
			for _, h := range hosts {
				weights += int(h.Weight)
			}
			want := map[string]int{}
			for _, h := range hosts {
				want[h.Address] = workers * each * int(h.Weight) / weights
			}
			if diff := cmp.Diff(want, total); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPickDoesNotAllocate(t *testing.T) {
	tests := map[string][][]*upstream.Host{
		"unweighted":     {makeHosts("a", "b", "c")},
		"weighted":       {makeHosts("a:1", "b:2", "c:3")},
		"two priorities": {makeHosts("a", "b!"), makeHosts("c", "d")},
	}
	for name, priorities := range tests {
		t.Run(name, func(t *testing.T) {
			b := New(priorities, Config{PanicThreshold: DefaultPanicThreshold})
			if allocs := testing.AllocsPerRun(100, func() { b.Pick(nil) }); allocs != 0 {
				t.Errorf("Pick allocates %v times per call", allocs)
			}
		})
	}
}
