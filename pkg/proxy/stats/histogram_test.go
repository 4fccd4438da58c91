package stats

import (
	"math"
	"sync"
	"testing"

	"github.com/circonus-labs/circonusllhist"
)

func TestHistogramStatistics(t *testing.T) {
	cases := map[string]struct {
		values    []uint64
		wantCount uint64
		wantSum   float64
		wantP50   float64
		wantB5    uint64 // values below 5
	}{
		"one value lands in a 10% bin": {[]uint64{300}, 1, 305, 305, 0},
		"zero":                         {[]uint64{0, 0}, 2, 0, 0, 2},
		"small and large":              {[]uint64{1, 2, 3, 1000}, 4, 1.05 + 2.05 + 3.05 + 1050, 2.1, 3},
		"huge value does not overflow": {[]uint64{math.MaxUint64}, 1, 0, 0, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore()
			h := s.Histogram("h")
			for _, v := range tc.values {
				h.Record(v)
			}
			s.MergeHistograms()
			st := h.CumulativeStatistics()
			if st.SampleCount != tc.wantCount {
				t.Errorf("count %d, want %d", st.SampleCount, tc.wantCount)
			}
			if name == "huge value does not overflow" {
				if !(st.Quantiles[NumQuantiles-1] > 9e18) {
					t.Errorf("P100 %v, want about MaxInt64", st.Quantiles[NumQuantiles-1])
				}
				return
			}
			if math.Abs(st.SampleSum-tc.wantSum) > 1e-9 {
				t.Errorf("sum %v, want %v", st.SampleSum, tc.wantSum)
			}
			if math.Abs(st.Quantiles[2]-tc.wantP50) > 1e-9 {
				t.Errorf("P50 %v, want %v", st.Quantiles[2], tc.wantP50)
			}
			if st.Buckets[2] != tc.wantB5 {
				t.Errorf("B5 %d, want %d", st.Buckets[2], tc.wantB5)
			}
		})
	}
}

func TestHistogramIntervalRolls(t *testing.T) {
	s := NewStore()
	h := s.Histogram("h")
	steps := []struct {
		name          string
		record        []uint64
		wantInterval  uint64
		wantCumulated uint64
	}{
		{"first interval", []uint64{1, 2, 3}, 3, 3},
		{"second interval", []uint64{10}, 1, 4},
		{"empty interval", nil, 0, 4},
	}
	for _, st := range steps {
		for _, v := range st.record {
			h.Record(v)
		}
		s.MergeHistograms()
		in, cum := h.IntervalStatistics(), h.CumulativeStatistics()
		if in.SampleCount != st.wantInterval || cum.SampleCount != st.wantCumulated {
			t.Errorf("%s: interval %d cumulative %d, want %d %d", st.name, in.SampleCount, cum.SampleCount, st.wantInterval, st.wantCumulated)
		}
		if st.wantInterval == 0 && !math.IsNaN(in.Quantiles[0]) {
			t.Errorf("%s: empty interval quantile %v, want NaN", st.name, in.Quantiles[0])
		}
	}
}

// TestMergeMatchesSingleHistogram checks that recording through shards and
// merging gives exactly what one circllhist recording every value gives.
func TestMergeMatchesSingleHistogram(t *testing.T) {
	s := NewStore()
	h := s.Histogram("h")
	ref := circonusllhist.NewNoLocks()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				v := uint64(g*1000 + i*7)
				h.Record(v)
				mu.Lock()
				_ = ref.RecordIntScale(int64(v), 0)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.MergeHistograms()
	got := h.CumulativeStatistics()
	want := computeStatistics(ref, h.Bounds())
	if got.SampleCount != 4000 || got.SampleCount != want.SampleCount {
		t.Fatalf("count %d, want %d", got.SampleCount, want.SampleCount)
	}
	if got.Quantiles != want.Quantiles {
		t.Errorf("quantiles %v, want %v", got.Quantiles, want.Quantiles)
	}
	if len(got.Bins) != len(want.Bins) {
		t.Errorf("%d bins, want %d", len(got.Bins), len(want.Bins))
	}
}

func TestDisjointBuckets(t *testing.T) {
	st := HistogramStatistics{Buckets: []uint64{1, 1, 4, 9}}
	got := st.DisjointBuckets(nil)
	want := []uint64{1, 0, 3, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("disjoint %v, want %v", got, want)
		}
	}
}

func TestParseDecString(t *testing.T) {
	cases := map[string]struct {
		in   string
		want decBin
		ok   bool
	}{
		"positive": {"H[1.2e+02]=3", decBin{12, 2, 3}, true},
		"zero":     {"H[0.0e+00]=1", decBin{0, 0, 1}, true},
		"negative": {"H[-5.5e-01]=2", decBin{-55, -1, 2}, true},
		"nan":      {"H[NaN]=1", decBin{}, false},
		"garbage":  {"nope", decBin{}, false},
		"no count": {"H[1.0e+00]=", decBin{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := parseDecString(tc.in)
			if ok != tc.ok || got != tc.want {
				t.Errorf("parseDecString(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestHistogramFirstRecordsAtOnce records the first values of a histogram
// from many goroutines at once: its shards are allocated then, and no
// value may be lost to a losing allocation.
func TestHistogramFirstRecordsAtOnce(t *testing.T) {
	s := NewStore()
	h := s.Histogram("first")
	if h.shards.Load() != nil {
		t.Fatal("a histogram that never recorded must have no shards")
	}
	const goroutines = 16
	var start, done sync.WaitGroup
	start.Add(1)
	for range goroutines {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			h.Record(7)
		}()
	}
	start.Done()
	done.Wait()
	s.MergeHistograms()
	if got := h.CumulativeStatistics().SampleCount; got != goroutines {
		t.Fatalf("sample count %d, want %d", got, goroutines)
	}
}
