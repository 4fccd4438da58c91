package stats

import (
	"errors"
	"fmt"
)

// StatType selects the stats of /stats?type=.
type StatType uint8

// The values of /stats?type=.
const (
	TypeAll StatType = iota
	TypeCounters
	TypeGauges
	TypeTextReadouts
	TypeHistograms
)

// ErrInvalidType is wrapped by ParseStatType's error; its text is also
// Envoy's exact 400 body.
var ErrInvalidType = errors.New("invalid &type= param")

// ParseStatType parses /stats?type= (case-sensitive, as Envoy); an empty
// value means TypeAll.
func ParseStatType(s string) (StatType, error) {
	switch s {
	case "", "All":
		return TypeAll, nil
	case "Counters":
		return TypeCounters, nil
	case "Gauges":
		return TypeGauges, nil
	case "TextReadouts":
		return TypeTextReadouts, nil
	case "Histograms":
		return TypeHistograms, nil
	}
	return TypeAll, fmt.Errorf("%w: %q", ErrInvalidType, s)
}

func typeOfKind(k Kind) StatType {
	switch k {
	case KindCounter:
		return TypeCounters
	case KindGauge:
		return TypeGauges
	case KindTextReadout:
		return TypeTextReadouts
	case KindHistogram:
		return TypeHistograms
	}
	return TypeAll
}

func (t StatType) includes(k Kind) bool { return t == TypeAll || t == typeOfKind(k) }

// VisitOptions select the stats Visit calls back for.
type VisitOptions struct {
	// UsedOnly skips stats never written (/stats?usedonly).
	UsedOnly bool
	// Filter, when not nil, keeps only names it matches (/stats?filter=).
	Filter Filter
	// Type restricts the kinds visited (/stats?type=).
	Type StatType
}

// Stat is one stat met by Visit. Exactly one of the pointers is set, as
// Kind says. Name is a buffer reused for the next stat: copy it to keep it.
type Stat struct {
	Kind        Kind
	Name        []byte
	Counter     *Counter
	Gauge       *Gauge
	TextReadout *TextReadout
	Histogram   *Histogram
	entry       uint32 // tree entry: kind and index in the kind's slab
}

// Visit calls fn for every stat selected by opts, in rendering order: text
// readouts sorted by name, then counters and gauges interleaved and sorted
// by name, then histograms sorted by name. It stops at and returns fn's
// first error.
//
// Visit does not hold the store's lock while walking: it walks a snapshot
// of the sorted name tree, so a slow fn (one writing to a slow client)
// never blocks stat creation or another walk. Stats created during the
// walk may be missed. Its memory does not grow with the number of stats.
// With UsedOnly it walks only the used stats and the prefixes leading to
// them, so its cost follows the number of used stats, not of all stats.
func (s *Store) Visit(opts VisitOptions, fn func(*Stat) error) error {
	s.mu.Lock()
	s.sortPending()
	s.mu.Unlock()
	w := walker{s: s, opts: opts, fn: fn, name: make([]byte, 0, 256)}
	if f, ok := opts.Filter.(PrefixedFilter); ok {
		w.prefix = f.LiteralPrefix()
	}
	for _, p := range [...]struct {
		root  uint32
		kinds []Kind
	}{
		{rootTextReadouts, []Kind{KindTextReadout}},
		{rootCounters, []Kind{KindCounter, KindGauge}},
		{rootHistograms, []Kind{KindHistogram}},
	} {
		if !opts.Type.includes(p.kinds[0]) && (len(p.kinds) == 1 || !opts.Type.includes(p.kinds[1])) {
			continue
		}
		if err := w.walk(p.root); err != nil {
			return err
		}
	}
	return nil
}

type walker struct {
	s     *Store
	opts  VisitOptions
	fn    func(*Stat) error
	name  []byte
	stack []frame
	stat  Stat
	// prefix is what every name the filter matches starts with (see
	// PrefixedFilter); "" for anything.
	prefix string
}

type frame struct {
	children []uint32
	next     int
	nameLen  int
}

func (w *walker) children(node uint32) []uint32 {
	n := w.s.nodes.at(node)
	p := n.sorted.Load()
	if w.opts.UsedOnly {
		p = n.used.Load()
	}
	if p != nil {
		return *p
	}
	return nil
}

func (w *walker) walk(root uint32) error {
	w.stack = append(w.stack[:0], frame{children: w.children(root)})
	w.name = w.name[:0]
	for len(w.stack) > 0 {
		f := &w.stack[len(w.stack)-1]
		if f.next == len(f.children) {
			w.name = w.name[:f.nameLen]
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		e := f.children[f.next]
		f.next++
		k, idx := entryKind(e), entryIndex(e)
		if k == kindPrefix {
			n := w.s.nodes.at(idx)
			l := len(w.name)
			w.name = append(append(w.name, w.s.segment(n.seg)...), '.')
			if !w.mayLeadToPrefix() {
				w.name = w.name[:l]
				continue
			}
			w.stack = append(w.stack, frame{children: w.children(idx), nameLen: l})
			continue
		}
		if err := w.leaf(k, idx); err != nil {
			return err
		}
	}
	return nil
}

// mayLeadToPrefix reports whether names under the node w.name names can
// start with w.prefix: one of the two starts with the other.
func (w *walker) mayLeadToPrefix() bool {
	n := min(len(w.name), len(w.prefix))
	return string(w.name[:n]) == w.prefix[:n]
}

func (w *walker) leaf(k Kind, idx uint32) error {
	if !w.opts.Type.includes(statKind(k)) {
		return nil
	}
	st := &w.stat
	*st = Stat{Kind: statKind(k), entry: makeEntry(k, idx)}
	var meta uint32
	switch k {
	case KindCounter:
		st.Counter = w.s.counters.at(idx)
		meta = st.Counter.meta.Load()
	case kindLazyCounter:
		st.Counter, _, meta = w.s.lazyStatOf(idx)
	case KindGauge:
		st.Gauge = w.s.gauges.at(idx)
		meta = st.Gauge.meta.Load()
	case KindTextReadout:
		st.TextReadout = w.s.texts.at(idx)
		meta = st.TextReadout.meta.Load()
	case KindHistogram:
		st.Histogram = w.s.hists.at(idx)
		meta = st.Histogram.meta.Load()
	}
	if w.opts.UsedOnly && meta&usedBit == 0 {
		return nil
	}
	l := len(w.name)
	w.name = append(w.name, w.s.segment(meta&metaMask)...)
	var err error
	if w.opts.Filter == nil || w.opts.Filter.Match(w.name) {
		st.Name = w.name
		err = w.fn(st)
	}
	w.name = w.name[:l]
	return err
}
