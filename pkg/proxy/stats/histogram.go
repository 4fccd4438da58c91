package stats

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/circonus-labs/circonusllhist"
)

// Unit says what a histogram's values measure. It only changes rendering:
// Prometheus scales UnitPercent histograms to 0-1.
type Unit uint8

// Histogram units, as Envoy has them.
const (
	UnitUnspecified Unit = iota
	UnitBytes
	UnitMicroseconds
	UnitMilliseconds
	UnitPercent
)

// PercentScale is the value a UnitPercent histogram records for 100%:
// percentages are recorded as integers scaled by it.
const PercentScale = 1_000_000

// maxHistogramShards bounds the per-histogram shards: past 64 the memory
// spent on idle shards outweighs the contention saved.
const maxHistogramShards = 64

// Histogram records a distribution with the circllhist algorithm. Recording
// goes to one of a fixed set of shards, each with its own lock and its own
// circllhist, picked at random and skipped when busy, so goroutines on
// different cores almost never wait for each other; the shards are only
// allocated when the histogram first records, and a shard's circllhist
// when it first records. Each flush merges the shards into
// the interval summary (since the previous flush) and adds that to the
// cumulative one.
type Histogram struct {
	store  *Store // nil for a histogram the stats matcher rejected
	parent uint32
	meta   atomic.Uint32 // last name segment id | usedBit
	unit   Unit
	// nshards is the number of shards, allocated on the first Record:
	// most of a cluster's histograms never record.
	nshards uint8
	// empty is the summary of no value, with the bucket bounds; it is the
	// store's, shared by every histogram with these bounds, so that a
	// histogram that never records (most of a cluster's) keeps no summary
	// of its own.
	empty  *HistogramStatistics
	shards atomic.Pointer[[]histShard]

	mu         sync.Mutex // guards everything below
	interval   *circonusllhist.Histogram
	cumulative *circonusllhist.Histogram
	// intStats and cumStats are empty until values arrive; a summary is
	// replaced, never modified, so readers may keep its slices.
	intStats *HistogramStatistics
	cumStats *HistogramStatistics
}

// histShard is padded to its own cache line pair so that two cores
// recording into neighbouring shards do not bounce a line between them.
type histShard struct {
	mu    sync.Mutex
	dirty bool
	h     *circonusllhist.Histogram
	_     [128 - 8 - 8 - 8]byte
}

func (h *Histogram) init(shards int, empty *HistogramStatistics, unit Unit) {
	h.nshards = uint8(shards)
	h.empty = empty
	h.unit = unit
	h.intStats = empty
	h.cumStats = empty
}

// Record adds one value. It never allocates once the chosen shard has
// recorded before, and does not wait for other goroutines unless every
// shard is busy at once.
func (h *Histogram) Record(v uint64) {
	if h.meta.Load()&usedBit == 0 {
		markUsed(h.store, KindHistogram, h.parent, &h.meta)
	}
	p := h.shards.Load()
	if p == nil {
		if h.nshards == 0 { // a zero Histogram, not made by a Store
			return
		}
		p = h.allocShards()
	}
	shards := *p // read the header once: the locks below are calls
	n := uint32(len(shards))
	var i uint32
	if n > 1 {
		// A random shard spreads the goroutines of several cores; with
		// one shard (GOMAXPROCS 1) the draw would cost more than the
		// record.
		i = rand.Uint32() & (n - 1)
	}
	for range n {
		sh := &shards[i]
		if sh.mu.TryLock() {
			sh.record(v)
			sh.mu.Unlock()
			return
		}
		i = (i + 1) & (n - 1)
	}
	sh := &shards[i]
	sh.mu.Lock()
	sh.record(v)
	sh.mu.Unlock()
}

// allocShards allocates the shards at the first Record; of goroutines
// recording first at once, one allocation wins.
//
//go:noinline
func (h *Histogram) allocShards() *[]histShard {
	s := make([]histShard, h.nshards)
	if h.shards.CompareAndSwap(nil, &s) {
		return &s
	}
	return h.shards.Load()
}

func (sh *histShard) record(v uint64) {
	if sh.h == nil {
		sh.h = circonusllhist.NewNoLocks()
	}
	iv := int64(math.MaxInt64)
	if v < math.MaxInt64 {
		iv = int64(v)
	}
	// RecordIntScale with an integer cannot fail; it only reports errors
	// for API symmetry with the float variants.
	_ = sh.h.RecordIntScale(iv, 0)
	sh.dirty = true
}

// Used reports whether a value was ever recorded.
func (h *Histogram) Used() bool { return h.meta.Load()&usedBit != 0 }

// Unit returns what the histogram's values measure.
func (h *Histogram) Unit() Unit { return h.unit }

// Bounds returns the bucket upper bounds; the caller must not modify them.
func (h *Histogram) Bounds() []float64 {
	if h.empty == nil { // a zero Histogram, not made by a Store
		return nil
	}
	return h.empty.Bounds
}

// statistics returns the summary s points to, or an empty one for a zero
// Histogram.
func statistics(s *HistogramStatistics) HistogramStatistics {
	if s == nil {
		return HistogramStatistics{}
	}
	return *s
}

// IntervalStatistics returns the summary of the values recorded between the
// last two flushes. Its slices are never modified afterwards.
func (h *Histogram) IntervalStatistics() HistogramStatistics {
	h.mu.Lock()
	defer h.mu.Unlock()
	return statistics(h.intStats)
}

// CumulativeStatistics returns the summary of every value recorded up to
// the last flush. Its slices are never modified afterwards.
func (h *Histogram) CumulativeStatistics() HistogramStatistics {
	h.mu.Lock()
	defer h.mu.Unlock()
	return statistics(h.cumStats)
}

// merge rolls the interval: the shards' values since the previous merge
// become the new interval summary and are added to the cumulative one.
func (h *Histogram) merge() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.interval == nil {
		h.interval = circonusllhist.NewNoLocks()
		h.cumulative = circonusllhist.NewNoLocks()
	}
	h.interval.Reset()
	added := false
	var shards []histShard
	if p := h.shards.Load(); p != nil {
		shards = *p
	}
	for i := range shards {
		sh := &shards[i]
		sh.mu.Lock()
		var bins []string
		if sh.dirty {
			bins = sh.h.DecStrings()
			sh.h.Reset()
			sh.dirty = false
		}
		sh.mu.Unlock()
		for _, s := range bins {
			b, ok := parseDecString(s)
			if !ok || b.count == 0 {
				continue
			}
			b.addTo(h.interval)
			b.addTo(h.cumulative)
			added = true
		}
	}
	if !added {
		// An idle interval leaves the cumulative summary as it was: only
		// the interval one empties, so a flush does not summarise every
		// idle histogram's whole history again.
		h.intStats = h.empty
		return
	}
	in := computeStatistics(h.interval, h.empty.Bounds)
	cum := computeStatistics(h.cumulative, h.empty.Bounds)
	h.intStats, h.cumStats = &in, &cum
}
