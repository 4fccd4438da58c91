package stats

import (
	"io"
	"math"
	"unicode/utf8"
)

// RenderJSON writes the /stats?format=json form: compact, streamed, with no
// trailing newline, exactly as Envoy's streaming JSON writer shapes it.
func RenderJSON(w io.Writer, s *Store, o RenderOptions) error {
	cw := newChunkWriter(w)
	cw.str(`{"stats":[`)
	first, histStarted := true, false
	var disjoint [2][]uint64
	err := s.Visit(o.VisitOptions, func(st *Stat) error {
		if st.Kind == KindHistogram {
			if !histStarted {
				if !first {
					cw.byte(',')
				}
				histStarted = true
				jsonHistogramsStart(cw, o.Buckets)
			} else {
				cw.byte(',')
			}
			jsonHistogram(cw, st, o.Buckets, &disjoint)
			return cw.maybeFlush()
		}
		if !first {
			cw.byte(',')
		}
		first = false
		cw.str(`{"name":`)
		jsonString(cw, st.Name)
		cw.str(`,"value":`)
		switch st.Kind {
		case KindTextReadout:
			jsonString(cw, []byte(st.TextReadout.Value()))
		case KindCounter:
			cw.uint(st.Counter.Value())
		case KindGauge:
			cw.int(st.Gauge.Value())
		}
		cw.byte('}')
		return cw.maybeFlush()
	})
	if err != nil {
		return err
	}
	if histStarted {
		if o.Buckets == BucketsSummary || o.Buckets == BucketsDetailed {
			cw.str("]}}")
		} else {
			cw.str("]}")
		}
	}
	cw.str("]}")
	return cw.flush()
}

func jsonHistogramsStart(cw *chunkWriter, mode HistogramBuckets) {
	switch mode {
	case BucketsCumulative, BucketsDisjoint:
		cw.str(`{"histograms":[`)
	case BucketsDetailed:
		cw.str(`{"histograms":{"supported_percentiles":`)
		jsonQuantileList(cw)
		cw.str(`,"details":[`)
	default:
		cw.str(`{"histograms":{"supported_quantiles":`)
		jsonQuantileList(cw)
		cw.str(`,"computed_quantiles":[`)
	}
}

func jsonQuantileList(cw *chunkWriter) {
	cw.byte('[')
	for i, l := range quantileLabels {
		if i > 0 {
			cw.byte(',')
		}
		cw.str(l)
	}
	cw.byte(']')
}

func jsonHistogram(cw *chunkWriter, st *Stat, mode HistogramBuckets, disjoint *[2][]uint64) {
	h := st.Histogram
	in, cum := h.IntervalStatistics(), h.CumulativeStatistics()
	cw.str(`{"name":`)
	jsonString(cw, st.Name)
	switch mode {
	case BucketsCumulative, BucketsDisjoint:
		ib, cb := bucketCounts(&in, &cum, mode, disjoint)
		cw.str(`,"buckets":[`)
		for i, b := range h.Bounds() {
			if i > 0 {
				cw.byte(',')
			}
			cw.str(`{"upper_bound":`)
			jsonDouble(cw, b)
			cw.str(`,"interval":`)
			cw.uint(ib[i])
			cw.str(`,"cumulative":`)
			cw.uint(cb[i])
			cw.byte('}')
		}
		cw.str("]}")
	case BucketsDetailed:
		cw.str(`,"totals":`)
		jsonBins(cw, cum.Bins)
		cw.str(`,"intervals":`)
		jsonBins(cw, in.Bins)
		cw.str(`,"percentiles":`)
		jsonQuantileValues(cw, &in, &cum)
		cw.byte('}')
	default:
		cw.str(`,"values":`)
		jsonQuantileValues(cw, &in, &cum)
		cw.byte('}')
	}
}

func jsonQuantileValues(cw *chunkWriter, in, cum *HistogramStatistics) {
	cw.byte('[')
	for i := range NumQuantiles {
		if i > 0 {
			cw.byte(',')
		}
		cw.str(`{"cumulative":`)
		jsonDouble(cw, cum.Quantiles[i])
		cw.str(`,"interval":`)
		jsonDouble(cw, in.Quantiles[i])
		cw.byte('}')
	}
	cw.byte(']')
}

func jsonBins(cw *chunkWriter, bins []Bin) {
	cw.byte('[')
	for i, b := range bins {
		if i > 0 {
			cw.byte(',')
		}
		cw.str(`{"lower_bound":`)
		jsonDouble(cw, b.LowerBound)
		cw.str(`,"width":`)
		jsonDouble(cw, b.Width)
		cw.str(`,"count":`)
		cw.uint(b.Count)
		cw.byte('}')
	}
	cw.byte(']')
}

// jsonDouble writes a number the way Envoy's JSON streamer does: shortest
// round-trip, NaN and infinities as null (JSON has neither).
func jsonDouble(cw *chunkWriter, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		cw.str("null")
		return
	}
	cw.buf = appendDouble(cw.buf, v)
}

const hexDigits = "0123456789abcdef"

// jsonString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, so
// the output always parses.
func jsonString(cw *chunkWriter, s []byte) {
	cw.byte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				cw.byte('\\')
				cw.byte(c)
			case c == '\n':
				cw.str(`\n`)
			case c == '\r':
				cw.str(`\r`)
			case c == '\t':
				cw.str(`\t`)
			case c < 0x20:
				cw.str(`\u00`)
				cw.byte(hexDigits[c>>4])
				cw.byte(hexDigits[c&0xf])
			default:
				cw.byte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			cw.str("\ufffd")
		} else {
			cw.bytes(s[i : i+n])
		}
		i += n
	}
	cw.byte('"')
}
