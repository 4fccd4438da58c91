package stats

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

func BenchmarkCounterInc(b *testing.B) {
	c := NewStore().Counter("bench")
	b.ReportAllocs()
	for b.Loop() {
		c.Inc()
	}
}

// BenchmarkAtomicAddFloor is the hardware's floor for BenchmarkCounterInc:
// one bare atomic add on one word, as a counter increment must at least
// do. Compare the two in the same run.
func BenchmarkAtomicAddFloor(b *testing.B) {
	var v atomic.Uint64
	for b.Loop() {
		v.Add(1)
	}
}

func BenchmarkGaugeSet(b *testing.B) {
	g := NewStore().Gauge("bench")
	b.ReportAllocs()
	var v int64
	for b.Loop() {
		v++
		g.Set(v)
	}
}

func BenchmarkGaugeIncDec(b *testing.B) {
	g := NewStore().Gauge("bench")
	b.ReportAllocs()
	for b.Loop() {
		g.Inc()
		g.Dec()
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewStore().Histogram("bench")
	h.Record(1)
	b.ReportAllocs()
	var v uint64
	for b.Loop() {
		v = (v + 37) & 4095
		h.Record(v)
	}
}

// BenchmarkHistogramRecordParallel records from 8 goroutines per processor
// at once: per-op time should stay near the uncontended figure.
func BenchmarkHistogramRecordParallel(b *testing.B) {
	h := NewStore().Histogram("bench")
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		var v uint64
		for pb.Next() {
			v = (v + 37) & 4095
			h.Record(v)
		}
	})
}

func BenchmarkCounterIncParallel(b *testing.B) {
	c := NewStore().Counter("bench")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Inc()
		}
	})
}

// bigStoreSize is the stat count of the rendering benchmarks: a million,
// or ten thousand with -short.
func bigStoreSize() int {
	if testing.Short() {
		return 10_000
	}
	return 1_000_000
}

// buildBigStore makes n counters named like a large mesh's: 100 counters
// in each of n/100 clusters, every 100th used.
func buildBigStore(n int) *Store {
	s := NewStore()
	for i := range n {
		c := s.Counter(fmt.Sprintf("cluster.service_%d.upstream_stat_%d", i/100, i%100))
		if i%100 == 0 {
			c.Inc()
		}
	}
	return s
}

// BenchmarkMemoryPerCounter reports the heap bytes each counter costs,
// names included.
func BenchmarkMemoryPerCounter(b *testing.B) {
	n := bigStoreSize()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cluster.service_%d.upstream_stat_%d", i/100, i%100)
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewStore()
		for _, name := range names {
			s.Counter(name)
		}
		s.CounterNames() // sorting is part of the cost
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "bytes/counter")
		// A Prometheus render adds the family index the store then keeps.
		if err := RenderPrometheus(io.Discard, s, RenderOptions{}); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "bytes/counter-after-prometheus")
		runtime.KeepAlive(s)
	}
}

// BenchmarkRender renders a big store in every format; the store is built
// once. B/op is the heap each render allocates.
func BenchmarkRender(b *testing.B) {
	s := buildBigStore(bigStoreSize())
	// The first renders sort the new stats and build the Prometheus family
	// index; BenchmarkPrometheusFirstRender measures that.
	_ = RenderText(io.Discard, s, RenderOptions{})
	_ = RenderPrometheus(io.Discard, s, RenderOptions{})
	noMatch, err := NewRE2Filter("^nomatch$")
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name   string
		render func(io.Writer, *Store, RenderOptions) error
		opts   RenderOptions
	}{
		{"text", RenderText, RenderOptions{}},
		{"text_usedonly", RenderText, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}},
		{"text_filter_nomatch", RenderText, RenderOptions{VisitOptions: VisitOptions{Filter: noMatch}}},
		{"json", RenderJSON, RenderOptions{}},
		{"json_usedonly", RenderJSON, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}},
		{"prometheus", RenderPrometheus, RenderOptions{Buckets: BucketsCumulative}},
		{"prometheus_usedonly", RenderPrometheus, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.render(io.Discard, s, tc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPrometheusFirstRender renders a freshly built big store: the
// cost of the first scrape, which places every stat in the family index.
// Building the store is not timed.
func BenchmarkPrometheusFirstRender(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		s := buildBigStore(bigStoreSize())
		_ = RenderText(io.Discard, s, RenderOptions{}) // the tree sort is not the index's cost
		b.StartTimer()
		if err := RenderPrometheus(io.Discard, s, RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrometheusAfterNewStats renders a big store after adding 100
// stats to it each time: the incremental placement in the family index.
func BenchmarkPrometheusAfterNewStats(b *testing.B) {
	s := buildBigStore(bigStoreSize())
	_ = RenderPrometheus(io.Discard, s, RenderOptions{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for range 100 {
			s.Counter(fmt.Sprintf("cluster.service_%d.new_stat", i))
			i++
		}
		if err := RenderPrometheus(io.Discard, s, RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCounterCreate creates b.N counters named like buildBigStore's
// in one store: the cost of a lookup that creates, the index growing.
func BenchmarkCounterCreate(b *testing.B) {
	names := make([]string, b.N)
	for i := range names {
		names[i] = fmt.Sprintf("cluster.service_%d.upstream_stat_%d", i/100, i%100)
	}
	s := NewStore()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Counter(names[i])
	}
}

// BenchmarkRenderPrometheusTagged renders a big store whose every name
// carries two tags, a cluster and a response code, as most of a real
// proxy's names do.
func BenchmarkRenderPrometheusTagged(b *testing.B) {
	n := bigStoreSize()
	s := NewStore()
	for i := range n {
		s.Counter(fmt.Sprintf("cluster.service_%d.upstream_rq_%d", i/100, 200+i%100)).Inc()
	}
	_ = RenderPrometheus(io.Discard, s, RenderOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if err := RenderPrometheus(io.Discard, s, RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// clusterShape is the mix of one cluster's stats in Envoy: 83 of them,
// most counters, a few gauges and three histograms.
const (
	clusterCounters   = 68
	clusterGauges     = 12
	clusterHistograms = 3
)

// createClusterStats creates the stats of cluster i through a scope, as a
// cluster's construction does.
func createClusterStats(s *Store, i int, counters, gauges, hists []string) {
	sc := s.Scope(fmt.Sprintf("cluster.service-%05d.", i))
	for _, n := range counters {
		sc.Counter(n)
	}
	for _, n := range gauges {
		sc.Gauge(n)
	}
	for _, n := range hists {
		sc.Histogram(n, UnitMilliseconds)
	}
}

func clusterStatNames() (counters, gauges, hists []string) {
	for i := range clusterCounters {
		counters = append(counters, fmt.Sprintf("upstream_counter_%d", i))
	}
	for i := range clusterGauges {
		gauges = append(gauges, fmt.Sprintf("upstream_gauge_%d", i))
	}
	for i := range clusterHistograms {
		hists = append(hists, fmt.Sprintf("upstream_time_%d_ms", i))
	}
	return counters, gauges, hists
}

// BenchmarkClusterStatsCreate creates 1,000 clusters' stats (83 each) in a
// fresh store per op: the CPU and allocations of creating a cluster's
// stats, and the heap they keep (bytes/cluster). cpu-ns/stat is the
// process's CPU time, the collector's included, which a loaded machine
// disturbs far less than ns/stat.
func BenchmarkClusterStatsCreate(b *testing.B) { benchClusterStatsCreate(b, 1000, false) }

// BenchmarkClusterStatsCreate10k is the same with 10,000 clusters, the
// size of the CDS goal (issue #16): the store's child index no longer fits
// the processor's caches, so a lookup that probes other stats' memory
// pays cache misses, which 1,000 clusters hide.
func BenchmarkClusterStatsCreate10k(b *testing.B) { benchClusterStatsCreate(b, 10000, false) }

// BenchmarkClusterStatsBlock is BenchmarkClusterStatsCreate with each
// cluster's stats made as one block of a template (Scope.NewBlock), as
// a cluster's construction makes its traffic stats: the gain of blocks
// over one lookup per name.
func BenchmarkClusterStatsBlock(b *testing.B) { benchClusterStatsCreate(b, 1000, true) }

// BenchmarkClusterStatsBlock10k is BenchmarkClusterStatsBlock with
// 10,000 clusters.
func BenchmarkClusterStatsBlock10k(b *testing.B) { benchClusterStatsCreate(b, 10000, true) }

// clusterTemplate is the template of the benchmarks' cluster stats.
func clusterTemplate(counters, gauges, hists []string) *Template {
	var ts []TemplateStat
	for _, n := range counters {
		ts = append(ts, CounterStat(n))
	}
	for _, n := range gauges {
		ts = append(ts, GaugeStat(n))
	}
	for _, n := range hists {
		ts = append(ts, HistogramStat(n, UnitMilliseconds))
	}
	return NewTemplate(ts...)
}

func benchClusterStatsCreate(b *testing.B, clusters int, block bool) {
	counters, gauges, hists := clusterStatNames()
	tmpl := clusterTemplate(counters, gauges, hists)
	b.ReportAllocs()
	var kept float64
	var cpu time.Duration
	for b.Loop() {
		var before, after runtime.MemStats
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		start := processCPU()
		s := NewStore()
		for i := range clusters {
			if block {
				s.Scope(fmt.Sprintf("cluster.service-%05d.", i)).NewBlock(tmpl)
				continue
			}
			createClusterStats(s, i, counters, gauges, hists)
		}
		// The first render sorts the new stats into the tree: part of
		// the cost.
		s.mu.Lock()
		s.sortPending()
		s.mu.Unlock()
		cpu += processCPU() - start
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(s)
		b.StartTimer()
	}
	b.ReportMetric(kept/float64(b.N)/float64(clusters), "bytes/cluster")
	perStat := float64(b.N) * float64(clusters) * (clusterCounters + clusterGauges + clusterHistograms)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perStat, "ns/stat")
	b.ReportMetric(float64(cpu.Nanoseconds())/perStat, "cpu-ns/stat")
}

// BenchmarkClusterStatsAgain looks up existing stats of 10,000 clusters
// again (a modified cluster's rebuild), and creates a few more under each
// scope after all of them exist (the EDS subscription's stats, made after
// CDS built every cluster): both find a scope's stats through the young
// map or the scope node's sorted list, not a store-wide index.
func BenchmarkClusterStatsAgain(b *testing.B) {
	counters, gauges, hists := clusterStatNames()
	s := NewStore()
	const clusters = 10000
	for i := range clusters {
		createClusterStats(s, i, counters, gauges, hists)
	}
	late := []string{"update_attempt", "update_success", "update_rejected", "version"}
	b.Run("lookup", func(b *testing.B) {
		i := 0
		for b.Loop() {
			createClusterStats(s, i%clusters, counters, gauges, hists)
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(clusterCounters+clusterGauges+clusterHistograms), "ns/stat")
	})
	b.Run("late", func(b *testing.B) {
		i := 0
		for b.Loop() {
			sc := s.Scope(fmt.Sprintf("cluster.service-%05d.", i%clusters))
			for _, n := range late {
				sc.Counter(n + strconv.Itoa(i/clusters))
			}
			i++
		}
	})
}
