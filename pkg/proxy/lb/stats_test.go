package lb

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// eagerLBStats creates every lb_* stat of a cluster as ordinary counters
// and gauges, as the clusters did before the counters were declared.
func eagerLBStats(sc stats.Scope, subsets bool) map[Counter]*stats.Counter {
	out := map[Counter]*stats.Counter{}
	for c := range numCounters {
		out[c] = sc.Counter(c.Name())
	}
	sc.Counter("lb_zone_number_differs")
	sc.Gauge("lb_subsets_active")
	if subsets {
		sc.Gauge("lb_subsets_single_host_per_subset_duplicate")
	}
	return out
}

// renders renders s in text, JSON and Prometheus, all stats and used ones.
func renders(t *testing.T, s *stats.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, used := range []bool{false, true} {
		o := stats.RenderOptions{VisitOptions: stats.VisitOptions{UsedOnly: used}}
		for name, render := range map[string]func(*bytes.Buffer) error{
			"text":       func(b *bytes.Buffer) error { return stats.RenderText(b, s, o) },
			"json":       func(b *bytes.Buffer) error { return stats.RenderJSON(b, s, o) },
			"prometheus": func(b *bytes.Buffer) error { return stats.RenderPrometheus(b, s, o) },
		} {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s usedonly=%v", name, used)] = b.String()
		}
	}
	return out
}

// TestStatsDeclaredRenderLikeCounters: the declared lb_* counters are
// listed, at zero and once counted, exactly as ordinary counters of the
// same names are, in every format; a counter is the store's counter of
// its name once counted.
func TestStatsDeclaredRenderLikeCounters(t *testing.T) {
	for _, subsets := range []bool{false, true} {
		t.Run(fmt.Sprintf("subsets=%v", subsets), func(t *testing.T) {
			eagerStore, lazyStore := stats.NewStore(), stats.NewStore()
			eager := eagerLBStats(eagerStore.Scope("cluster.c."), subsets)
			lazy := NewStats(lazyStore.Scope("cluster.c."), subsets)
			same := func(step string) {
				t.Helper()
				e, l := renders(t, eagerStore), renders(t, lazyStore)
				for k := range e {
					if e[k] != l[k] {
						t.Fatalf("%s: %s differs:\neager:\n%s\ndeclared:\n%s", step, k, e[k], l[k])
					}
				}
			}
			same("new")
			if got := renders(t, lazyStore)["text usedonly=false"]; !bytes.Contains([]byte(got), []byte("cluster.c.lb_zone_routing_sampled: 0\n")) {
				t.Fatalf("lb_zone_routing_sampled not listed at 0:\n%s", got)
			}
			lazy.inc(ZoneRoutingSampled)
			eager[ZoneRoutingSampled].Inc()
			lazy.add(SubsetsCreated, 3)
			eager[SubsetsCreated].Add(3)
			lazy.add(SubsetsRemoved, 0) // nothing: stays declared, unused
			same("counted")
			if c := lazy.Counter(ZoneRoutingSampled); c != lazyStore.Counter("cluster.c.lb_zone_routing_sampled") || c.Value() != 1 {
				t.Errorf("lb_zone_routing_sampled: the LazyCounter's counter is not the store's, or counts %d", c.Value())
			}
		})
	}
}

// TestNilStatsCountNothing: a balancer built without stats counts
// nothing, and does not fail.
func TestNilStatsCountNothing(t *testing.T) {
	var st *Stats
	st.inc(LocalClusterNotOK)
	st.add(SubsetsCreated, 2)
}
