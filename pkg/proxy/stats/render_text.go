package stats

import "io"

// RenderText writes the /stats text format: one "name: value" line per
// stat, text readouts quoted, histograms as quantile or bucket lists.
func RenderText(w io.Writer, s *Store, o RenderOptions) error {
	cw := newChunkWriter(w)
	var disjoint [2][]uint64
	err := s.Visit(o.VisitOptions, func(st *Stat) error {
		cw.bytes(st.Name)
		cw.str(": ")
		switch st.Kind {
		case KindTextReadout:
			cw.byte('"')
			cw.str(st.TextReadout.Value())
			cw.str("\"\n")
		case KindCounter:
			cw.uint(st.Counter.Value())
			cw.byte('\n')
		case KindGauge:
			cw.int(st.Gauge.Value())
			cw.byte('\n')
		case KindHistogram:
			textHistogram(cw, st.Histogram, o.Buckets, &disjoint)
		}
		return cw.maybeFlush()
	})
	if err != nil {
		return err
	}
	return cw.flush()
}

func textHistogram(cw *chunkWriter, h *Histogram, mode HistogramBuckets, disjoint *[2][]uint64) {
	if !h.Used() {
		cw.str("No recorded values\n")
		return
	}
	in, cum := h.IntervalStatistics(), h.CumulativeStatistics()
	switch mode {
	case BucketsCumulative, BucketsDisjoint:
		ib, cb := bucketCounts(&in, &cum, mode, disjoint)
		for i, b := range h.Bounds() {
			if i > 0 {
				cw.byte(' ')
			}
			cw.byte('B')
			cw.buf = appendG(cw.buf, b, 6)
			cw.byte('(')
			cw.uint(ib[i])
			cw.byte(',')
			cw.uint(cb[i])
			cw.byte(')')
		}
		cw.byte('\n')
	case BucketsDetailed:
		cw.buf = cw.buf[:len(cw.buf)-1] // Envoy writes "name:" here, not "name: "
		cw.str("\n  totals=")
		textBins(cw, cum.Bins)
		cw.str("\n  intervals=")
		textBins(cw, in.Bins)
		cw.str("\n  summary=")
		textQuantiles(cw, &in, &cum)
		cw.byte('\n')
	default:
		textQuantiles(cw, &in, &cum)
		cw.byte('\n')
	}
}

func textQuantiles(cw *chunkWriter, in, cum *HistogramStatistics) {
	for i, l := range quantileLabels {
		if i > 0 {
			cw.byte(' ')
		}
		cw.byte('P')
		cw.str(l)
		cw.byte('(')
		cw.buf = appendDouble(cw.buf, in.Quantiles[i])
		cw.byte(',')
		cw.buf = appendDouble(cw.buf, cum.Quantiles[i])
		cw.byte(')')
	}
}

func textBins(cw *chunkWriter, bins []Bin) {
	for i, b := range bins {
		if i > 0 {
			cw.str(", ")
		}
		cw.buf = appendG(cw.buf, b.LowerBound, 15)
		cw.byte(',')
		cw.buf = appendG(cw.buf, b.Width, 15)
		cw.byte(':')
		cw.uint(b.Count)
	}
}
