package stats

import "io"

// RenderPrometheus writes the Prometheus text exposition format 0.0.4:
// families of counters, then gauges, then (with TextReadouts) text
// readouts as gauges, then histograms; families sorted by tag-extracted
// name, series within a family by full name; labels from tag extraction;
// names in o.Naming, each family's HELP line (from o.Help) before its
// TYPE line.
//
// The families come from an index the store keeps (see familyIndex), so a
// render allocates nothing that grows with the number of stats, except to
// place the stats created since the previous render into the index.
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

// kind renders every family of one kind.
func (r *promRenderer) kind(k Kind) error {
	families, err := r.s.promFamilies(k)
	if err != nil {
		return err
	}
	for _, f := range families {
		if err := r.family(k, f); err != nil {
			return err
		}
	}
	return nil
}

// promBatch is how many members of a family are looked up at once.
const promBatch = 64

// family writes the selected series of f, preceded by its HELP and TYPE
// lines if it has any. It stops at the first write error.
//
// A family's members lie far apart in memory (a cluster's hundred stats
// sit between two members of one family), so each costs a cache miss. The
// name words of a batch of members are loaded in a first, short loop whose
// loads are independent, letting the processor overlap the misses, before
// the long per-series work.
func (r *promRenderer) family(k Kind, f *promFamily) error {
	members := *f.members.Load()
	var parents, metas [promBatch]uint32
	typed := false
	for len(members) > 0 {
		batch := members[:min(promBatch, len(members))]
		members = members[len(batch):]
		for j, e := range batch {
			parents[j], metas[j] = r.s.statName(entryKind(e), entryIndex(e))
		}
		for j, e := range batch {
			if err := r.series(k, f, &typed, e, parents[j], metas[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// series writes one member's series if the options select it, after the
// family's TYPE line if it is the first; typed records that. e is the
// member's tree entry.
func (r *promRenderer) series(k Kind, f *promFamily, typed *bool, e, parent, meta uint32) error {
	if r.opts.UsedOnly && meta&usedBit == 0 {
		return nil
	}
	r.name = r.s.appendName(r.name[:0], parent, meta)
	if r.opts.Filter != nil && !r.opts.Filter.Match(r.name) {
		return nil
	}
	name := f.names[r.opts.Naming]
	if !*typed {
		*typed = true
		r.helpLine(name, f.stat)
		r.typeLine(k, name)
	}
	r.s.TagProducer().Extract(r.name, &r.x)
	cw := r.cw
	idx := entryIndex(e)
	switch entryKind(e) {
	case KindCounter:
		r.sample(name, "", nil)
		cw.uint(r.s.counters.at(idx).Value())
		cw.byte('\n')
	case kindLazyCounter:
		c, _, _ := r.s.lazyStatOf(idx)
		r.sample(name, "", nil)
		cw.uint(c.Value())
		cw.byte('\n')
	case KindGauge:
		r.sample(name, "", nil)
		cw.int(r.s.gauges.at(idx).Value())
		cw.byte('\n')
	case KindTextReadout:
		r.sample(name, "text_value", []byte(r.s.texts.at(idx).Value()))
		cw.str("0\n")
	case KindHistogram:
		r.histogram(name, r.s.hists.at(idx))
	}
	// A family may be big: flush inside it so the buffer stays small.
	return cw.maybeFlush()
}

// helpLine writes the family's HELP line when it has a help text, with
// the backslashes and newlines escaped as the format requires.
func (r *promRenderer) helpLine(name, stat string) {
	if r.opts.Help == nil {
		return
	}
	help := r.opts.Help(stat)
	if help == "" {
		return
	}
	cw := r.cw
	cw.str("# HELP ")
	cw.str(name)
	cw.byte(' ')
	for i := range len(help) {
		switch c := help[i]; c {
		case '\\':
			cw.str(`\\`)
		case '\n':
			cw.str(`\n`)
		default:
			cw.byte(c)
		}
	}
	cw.byte('\n')
}

func (r *promRenderer) typeLine(k Kind, name string) {
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
}

// sample writes "name{tags[,extra="value"]} " (the braces even when empty).
func (r *promRenderer) sample(name, extra string, value []byte) {
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
		cw.buf = r.opts.Naming.appendLabel(cw.buf, t.Name)
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
var promQuantiles = [NumQuantiles]string{"0", "0.25", "0.5", "0.75", "0.9", "0.95", "0.99", "0.999", "1"}

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
			r.sample(name, "quantile", []byte(q))
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
