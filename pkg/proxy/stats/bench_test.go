package stats

import (
	"fmt"
	"io"
	"runtime"
	"testing"
)

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
		runtime.KeepAlive(s)
	}
}

// BenchmarkRender renders a big store in every format; the store is built
// once. B/op is the heap each render allocates.
func BenchmarkRender(b *testing.B) {
	s := buildBigStore(bigStoreSize())
	_ = RenderText(io.Discard, s, RenderOptions{}) // first sort
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
		{"prometheus", RenderPrometheus, RenderOptions{Buckets: BucketsCumulative}},
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
