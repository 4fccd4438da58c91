package stats

import (
	"cmp"
	"io"
	"slices"
)

// RenderPrometheus writes the Prometheus text exposition format 0.0.4:
// families of counters, then gauges, then (with TextReadouts) text
// readouts as gauges, then histograms; families sorted by tag-extracted
// name, series within a family by full name; labels from tag extraction.
//
// Grouping series into families needs an index of the selected stats,
// about 4 bytes per stat, held only while rendering.
func RenderPrometheus(w io.Writer, s *Store, o RenderOptions) error {
	r := promRenderer{s: s, cw: newChunkWriter(w), opts: o}
	kinds := []Kind{KindCounter, KindGauge}
	if o.TextReadouts {
		kinds = append(kinds, KindTextReadout)
	}
	kinds = append(kinds, KindHistogram)
	for _, k := range kinds {
		if err := r.kind(k); err != nil {
			return err
		}
	}
	return r.cw.flush()
}

type promRenderer struct {
	s    *Store
	cw   *chunkWriter
	opts RenderOptions
	x    Extraction
	name []byte
}

// promFamily is one metric family: its name and its stats' slab indexes,
// in full-name order.
type promFamily struct {
	name string
	idxs []uint32
}

// kind renders every family of one kind.
func (r *promRenderer) kind(k Kind) error {
	ids := map[string]int{}
	var families []promFamily
	tags := r.s.TagProducer()
	vo := r.opts.VisitOptions
	vo.Type = typeOfKind(k)
	err := r.s.Visit(vo, func(st *Stat) error {
		tags.Extract(st.Name, &r.x)
		r.name = appendSanitized(append(r.name[:0], "proxy_"...), r.x.Name)
		id, ok := ids[string(r.name)]
		if !ok {
			id = len(families)
			families = append(families, promFamily{name: string(r.name)})
			ids[families[id].name] = id
		}
		families[id].idxs = append(families[id].idxs, st.idx)
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(families, func(a, b promFamily) int { return cmp.Compare(a.name, b.name) })
	for _, f := range families {
		r.family(k, f.name, f.idxs)
		if err := r.cw.maybeFlush(); err != nil {
			return err
		}
	}
	return nil
}

func (r *promRenderer) family(k Kind, name string, idxs []uint32) {
	cw := r.cw
	cw.str("# TYPE ")
	cw.str(name)
	switch {
	case k == KindCounter:
		cw.str(" counter\n")
	case k == KindHistogram && r.opts.Buckets == BucketsSummary:
		cw.str(" summary\n")
	case k == KindHistogram:
		cw.str(" histogram\n")
	default:
		cw.str(" gauge\n")
	}
	for _, idx := range idxs {
		var parent, meta uint32
		var c *Counter
		var g *Gauge
		var t *TextReadout
		var h *Histogram
		switch k {
		case KindCounter:
			c = r.s.counters.at(idx)
			parent, meta = c.parent, c.meta.Load()
		case KindGauge:
			g = r.s.gauges.at(idx)
			parent, meta = g.parent, g.meta.Load()
		case KindTextReadout:
			t = r.s.texts.at(idx)
			parent, meta = t.parent, t.meta.Load()
		case KindHistogram:
			h = r.s.hists.at(idx)
			parent, meta = h.parent, h.meta.Load()
		}
		r.name = r.s.appendName(r.name[:0], parent, meta)
		r.s.TagProducer().Extract(r.name, &r.x)
		switch k {
		case KindCounter:
			r.series(name, "", nil)
			cw.uint(c.Value())
			cw.byte('\n')
		case KindGauge:
			r.series(name, "", nil)
			cw.int(g.Value())
			cw.byte('\n')
		case KindTextReadout:
			r.series(name, "text_value", []byte(t.Value()))
			cw.str("0\n")
		case KindHistogram:
			r.histogram(name, h)
		}
	}
}

// series writes "name{tags[,extra="value"]} " (the braces even when empty).
func (r *promRenderer) series(name, extra string, value []byte) {
	cw := r.cw
	cw.str(name)
	r.labels(extra, value)
	cw.byte(' ')
}

func (r *promRenderer) labels(extra string, value []byte) {
	cw := r.cw
	cw.byte('{')
	for i, t := range r.x.Tags {
		if i > 0 {
			cw.byte(',')
		}
		cw.buf = appendSanitized(cw.buf, t.Name)
		cw.str(`="`)
		appendLabelValue(cw, t.Value)
		cw.byte('"')
	}
	if extra != "" {
		if len(r.x.Tags) > 0 {
			cw.byte(',')
		}
		cw.str(extra)
		cw.str(`="`)
		appendLabelValue(cw, value)
		cw.byte('"')
	}
	cw.byte('}')
}

// promQuantiles are the summary quantile labels.
var promQuantiles = [NumQuantiles]string{"0", "0.25", "0.5", "0.75", "0.9", "0.95", "0.99", "0.995", "0.999", "1"}

func (r *promRenderer) histogram(name string, h *Histogram) {
	cw := r.cw
	scale := 1.0
	if h.unit == UnitPercent {
		scale = PercentScale
	}
	var st HistogramStatistics
	if r.opts.Buckets == BucketsSummary {
		st = h.IntervalStatistics()
		for i, q := range promQuantiles {
			r.series(name, "quantile", []byte(q))
			cw.buf = appendG(cw.buf, st.Quantiles[i]/scale, 32)
			cw.byte('\n')
		}
	} else {
		st = h.CumulativeStatistics()
		var le []byte
		for i, b := range st.Bounds {
			le = appendG(le[:0], b/scale, 32)
			cw.str(name)
			cw.str("_bucket")
			r.labels("le", le)
			cw.byte(' ')
			cw.uint(st.Buckets[i])
			cw.byte('\n')
		}
		cw.str(name)
		cw.str("_bucket")
		r.labels("le", []byte("+Inf"))
		cw.byte(' ')
		cw.uint(st.SampleCount)
		cw.byte('\n')
	}
	cw.str(name)
	cw.str("_sum")
	r.labels("", nil)
	cw.byte(' ')
	cw.buf = appendG(cw.buf, st.SampleSum/scale, 32)
	cw.byte('\n')
	cw.str(name)
	cw.str("_count")
	r.labels("", nil)
	cw.byte(' ')
	cw.uint(st.SampleCount)
	cw.byte('\n')
}

// appendSanitized appends name with every byte outside [a-zA-Z0-9_]
// replaced by '_', as Prometheus metric and label names require.
func appendSanitized[S string | []byte](dst []byte, name S) []byte {
	for i := range len(name) {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			dst = append(dst, c)
		} else {
			dst = append(dst, '_')
		}
	}
	return dst
}

// appendLabelValue escapes a label value: backslash, newline and quote.
func appendLabelValue(cw *chunkWriter, v []byte) {
	for _, c := range v {
		switch c {
		case '\\':
			cw.str(`\\`)
		case '\n':
			cw.str(`\n`)
		case '"':
			cw.str(`\"`)
		default:
			cw.byte(c)
		}
	}
}
