package stats

import (
	"math"
	"strconv"
	"strings"

	"github.com/circonus-labs/circonusllhist"
)

// supportedQuantiles are the quantiles every histogram summary reports (text
// labels P0 ... P100, JSON ×100): the admin interface specification's list,
// the same in every output. Recent Envoy builds add 0.995 (see
// docs/compat.md).
var supportedQuantiles = [...]float64{0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1}

// NumQuantiles is the number of supported quantiles.
const NumQuantiles = len(supportedQuantiles)

// SupportedQuantiles returns the quantiles of HistogramStatistics.Quantiles,
// as fractions (0 to 1).
func SupportedQuantiles() [NumQuantiles]float64 { return supportedQuantiles }

// defaultBuckets are Envoy's default bucket upper bounds (milliseconds for
// time histograms).
var defaultBuckets = [...]float64{
	0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
	60000, 300000, 600000, 1800000, 3600000,
}

// DefaultBuckets returns Envoy's default bucket upper bounds.
func DefaultBuckets() []float64 { return append([]float64(nil), defaultBuckets[:]...) }

// Bin is one circllhist bin: the values in [LowerBound, LowerBound+Width).
type Bin struct {
	LowerBound float64
	Width      float64
	Count      uint64
}

// HistogramStatistics summarises a histogram over an interval or since
// start. Quantiles are NaN when there is no data.
type HistogramStatistics struct {
	// Quantiles are the values at SupportedQuantiles.
	Quantiles [NumQuantiles]float64
	// Bounds are the bucket upper bounds and Buckets the number of values
	// below each, cumulatively (as circllhist approximates them).
	Bounds  []float64
	Buckets []uint64
	// SampleCount and SampleSum are the number of values and their
	// approximate sum (bin midpoints).
	SampleCount uint64
	SampleSum   float64
	// Bins are the non-empty circllhist bins, in increasing order.
	Bins []Bin
}

// DisjointBuckets returns the number of values in each bucket alone (above
// the previous bound and below its own), appended to dst.
func (s *HistogramStatistics) DisjointBuckets(dst []uint64) []uint64 {
	var prev uint64
	for _, c := range s.Buckets {
		dst = append(dst, c-prev)
		prev = c
	}
	return dst
}

func emptyStatistics(bounds []float64) HistogramStatistics {
	s := HistogramStatistics{Bounds: bounds, Buckets: make([]uint64, len(bounds))}
	for i := range s.Quantiles {
		s.Quantiles[i] = math.NaN()
	}
	return s
}

// computeStatistics summarises a merged circllhist.
func computeStatistics(h *circonusllhist.Histogram, bounds []float64) HistogramStatistics {
	s := emptyStatistics(bounds)
	for _, str := range h.DecStrings() {
		b, ok := parseDecString(str)
		if !ok || b.count == 0 {
			continue
		}
		lb, w := b.lowerBound(), b.width()
		s.Bins = append(s.Bins, Bin{LowerBound: lb, Width: w, Count: b.count})
		s.SampleCount += b.count
		for i, ub := range bounds {
			s.Buckets[i] += countBelow(lb, w, b.count, ub)
		}
	}
	if s.SampleCount == 0 {
		return s
	}
	s.SampleSum = h.ApproxSum()
	if q, err := h.ApproxQuantile(supportedQuantiles[:]); err == nil {
		copy(s.Quantiles[:], q)
	}
	return s
}

// countBelow approximates how many of a bin's values lie below bound,
// interpolating linearly inside the bin, as circllhist's
// hist_approx_count_below does.
func countBelow(lb, width float64, count uint64, bound float64) uint64 {
	switch {
	case lb+width <= bound:
		return count
	case lb >= bound || width == 0:
		return 0
	}
	return uint64(float64(count) * (bound - lb) / width)
}

// decBin is a circllhist bin in the library's own terms: a two-digit
// mantissa (10-99, or 0 for the zero bin) and a power of ten, so the bin
// holds [val/10 × 10^exp, (val+1)/10 × 10^exp).
type decBin struct {
	val   int
	exp   int
	count uint64
}

// parseDecString reads one entry of circonusllhist's DecStrings,
// "H[1.2e+02]=3". The library offers no merge, so merging re-records each
// bin through RecordIntScales, which maps (val, exp) back to the same bin
// exactly.
func parseDecString(s string) (decBin, bool) {
	rest, ok := strings.CutPrefix(s, "H[")
	if !ok {
		return decBin{}, false
	}
	num, cnt, ok := strings.Cut(rest, "]=")
	if !ok {
		return decBin{}, false
	}
	mant, exp, ok := strings.Cut(num, "e")
	if !ok {
		return decBin{}, false
	}
	m, err := strconv.ParseFloat(mant, 64)
	if err != nil || math.IsNaN(m) {
		return decBin{}, false
	}
	e, err := strconv.Atoi(exp)
	if err != nil {
		return decBin{}, false
	}
	c, err := strconv.ParseUint(cnt, 10, 64)
	if err != nil {
		return decBin{}, false
	}
	return decBin{val: int(math.Round(m * 10)), exp: e, count: c}, true
}

func (b decBin) addTo(h *circonusllhist.Histogram) {
	// RecordIntScales never fails; see histShard.record.
	_ = h.RecordIntScales(int64(b.val), b.exp-1, int64(b.count))
}

func (b decBin) width() float64 {
	if b.val == 0 {
		return 0
	}
	return math.Pow10(b.exp) / 10
}

func (b decBin) lowerBound() float64 {
	v := float64(b.val) / 10 * math.Pow10(b.exp)
	if v < 0 {
		return v - b.width()
	}
	return v
}
