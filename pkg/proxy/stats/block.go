package stats

import (
	"fmt"
	"slices"
	"strings"
)

// A Template is the fixed set of stats a component makes under each of
// many scopes: a cluster's traffic stats under every "cluster.<name>.".
// Scope.NewBlock makes all of them at once, which costs the store far less
// than one lookup per name: the scope's prefix is resolved once per tree
// root, the stats are allocated one after another in their slabs, and the
// scope's node gets its sorted child list in one merge, since the walk
// order of the template's names is known in advance. Made one by one, each
// stat would probe the young map, wait in the pending list and be sorted
// by the next render (a CDS update of 10,000 clusters makes a million).
//
// The stats are ordinary stats of the store afterwards: listed, rendered,
// flushed, found by name and filtered exactly as the same names made one
// by one. A Template is immutable, so components keep one per stat set;
// the store remembers its names' segment ids.
type Template struct {
	stats []TemplateStat
	// walk holds, per tree root (templateRoot), the positions of the
	// stats under it in walk order.
	walk [numTemplateRoots][]int32
	// rank is each position's place among the template's stats of the
	// same slab, so the consecutive stats of a block are found by it.
	rank []uint32
}

// TemplateStat is one stat of a Template: a one-segment short name and
// its kind.
type TemplateStat struct {
	name string
	kind Kind // KindCounter, KindGauge, KindHistogram or kindLazyCounter
	unit Unit
}

// CounterStat is a counter of a Template.
func CounterStat(name string) TemplateStat { return TemplateStat{name: name, kind: KindCounter} }

// GaugeStat is a gauge of a Template.
func GaugeStat(name string) TemplateStat { return TemplateStat{name: name, kind: KindGauge} }

// HistogramStat is a histogram of a Template, made with unit.
func HistogramStat(name string, unit Unit) TemplateStat {
	return TemplateStat{name: name, kind: KindHistogram, unit: unit}
}

// DeclaredCounterStat is a declared counter of a Template (see
// Scope.DeclareCounter): listed at zero, allocated when first asked for
// by name.
func DeclaredCounterStat(name string) TemplateStat {
	return TemplateStat{name: name, kind: kindLazyCounter}
}

// The tree roots a template's stats go under: counters, gauges and
// declared counters share one, histograms have their own.
const (
	templateCounters = iota
	templateHistograms
	numTemplateRoots
)

// templateRootOf returns the template root of a stat kind.
func templateRootOf(k Kind) int {
	if k == KindHistogram {
		return templateHistograms
	}
	return templateCounters
}

// treeRoot returns the name tree root of a template root.
func treeRoot(r int) uint32 {
	if r == templateHistograms {
		return rootHistograms
	}
	return rootCounters
}

// The slabs a template's stats are allocated in, for Block.base.
const (
	slabCounters = iota
	slabGauges
	slabHistograms
	slabLazies
	numBlockSlabs
)

// slabOf returns the slab a stat of kind k is allocated in.
func slabOf(k Kind) int {
	switch k {
	case KindGauge:
		return slabGauges
	case KindHistogram:
		return slabHistograms
	case kindLazyCounter:
		return slabLazies
	}
	return slabCounters
}

// NewTemplate returns the template of stats, in that order: Block's
// accessors take a stat's position in it. A name must be one non-empty
// segment (no dot), and a name appears at most once per kind (a declared
// counter is a counter); a template that breaks either is a programming
// error, and NewTemplate panics.
func NewTemplate(stats ...TemplateStat) *Template {
	t := &Template{stats: slices.Clone(stats), rank: make([]uint32, len(stats))}
	var counts [numBlockSlabs]uint32
	seen := map[[2]string]bool{}
	for p, st := range t.stats {
		if st.name == "" || strings.Contains(st.name, ".") {
			panic(fmt.Sprintf("stats: template stat %q is not one name segment", st.name))
		}
		key := [2]string{st.name, statKind(st.kind).String()}
		if seen[key] {
			panic(fmt.Sprintf("stats: template has %s %q twice", key[1], st.name))
		}
		seen[key] = true
		sl := slabOf(st.kind)
		t.rank[p] = counts[sl]
		counts[sl]++
		r := templateRootOf(st.kind)
		t.walk[r] = append(t.walk[r], int32(p))
	}
	for _, order := range t.walk {
		slices.SortFunc(order, func(a, b int32) int {
			sa, sb := &t.stats[a], &t.stats[b]
			return compareSiblings(sa.name, makeEntry(sa.kind, 0), sb.name, makeEntry(sb.kind, 0))
		})
	}
	return t
}

// Block is the stats of one Template made under one scope. Its accessors
// take a stat's position in the template and return the same stat the
// scope's Counter, Gauge or Histogram of that name returns.
type Block struct {
	s *Store
	t *Template
	// base is each slab's index of the block's first stat in it, when the
	// block's stats were all made together (ptrs nil).
	base [numBlockSlabs]uint32
	// ptrs holds each position's stat otherwise (some existed already,
	// the stats matcher judged the names, a stat was rejected): a
	// *Counter, *Gauge or *Histogram, nil for a declared counter.
	ptrs []any
}

// Counter returns the counter at position i of the block's template.
func (b Block) Counter(i int) *Counter {
	b.want(i, KindCounter)
	if b.ptrs != nil {
		return b.ptrs[i].(*Counter)
	}
	return b.s.counters.at(b.base[slabCounters] + b.t.rank[i])
}

// Gauge returns the gauge at position i of the block's template.
func (b Block) Gauge(i int) *Gauge {
	b.want(i, KindGauge)
	if b.ptrs != nil {
		return b.ptrs[i].(*Gauge)
	}
	return b.s.gauges.at(b.base[slabGauges] + b.t.rank[i])
}

// Histogram returns the histogram at position i of the block's template.
func (b Block) Histogram(i int) *Histogram {
	b.want(i, KindHistogram)
	if b.ptrs != nil {
		return b.ptrs[i].(*Histogram)
	}
	return b.s.hists.at(b.base[slabHistograms] + b.t.rank[i])
}

// want panics unless the stat at position i is of kind k: asking a
// block for a stat of another kind is a programming error.
func (b Block) want(i int, k Kind) {
	if got := b.t.stats[i].kind; got != k {
		panic(fmt.Sprintf("stats: template stat %d (%q) is a %s, not a %s", i, b.t.stats[i].name, statKind(got), k))
	}
}

// NewBlock makes the stats of t under the scope, or finds those that
// exist, as the scope's Counter, Gauge, Histogram and DeclareCounter of
// each name would, and returns them.
func (sc Scope) NewBlock(t *Template) Block {
	s := sc.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.newBlock(sc.prefix, t); ok {
		return b
	}
	// Name by name: a stats matcher with patterns, tracked lookups, a
	// prefix that is not a scope's, or a node with stats in the young map.
	b := Block{s: s, t: t, ptrs: make([]any, len(t.stats))}
	for p, st := range t.stats {
		prefix, name := splitName(sc.prefix, st.name)
		switch st.kind {
		case KindCounter:
			b.ptrs[p] = s.counterLocked(prefix, name)
		case KindGauge:
			b.ptrs[p] = s.gaugeLocked(prefix, name)
		case KindHistogram:
			b.ptrs[p] = s.histogramLocked(prefix, name, st.unit)
		case kindLazyCounter:
			s.declareLocked(prefix, name)
		}
	}
	return b
}

// newBlock makes the block of t under prefix in one pass per tree root,
// or returns false when it must be made name by name (see NewBlock). The
// caller holds s.mu.
func (s *Store) newBlock(prefix string, t *Template) (Block, bool) {
	if !s.matcher.acceptsAll() || prefix == "" || !strings.HasSuffix(prefix, ".") {
		return Block{}, false
	}
	segs, ok := s.templateSegments(t)
	if !ok {
		return Block{}, false
	}
	var nodes [numTemplateRoots]uint32
	for r, order := range t.walk {
		if len(order) == 0 {
			continue
		}
		node, _ := s.resolvePrefix(treeRoot(r), prefix, true)
		if s.nodes.at(node).young {
			return Block{}, false
		}
		nodes[r] = node
	}
	if !s.lookups.recordMany(len(t.stats)) {
		return Block{}, false
	}
	// The node of each root gets a new sorted list: its old children
	// with the template's stats merged in, a placeholder for each new
	// one (slot), the existing entry of each that exists (found).
	n := len(t.stats)
	s.blockScratch = slices.Grow(s.blockScratch[:0], 2*n)[:2*n]
	found, slot := s.blockScratch[:n], s.blockScratch[n:]
	clear(found)
	var lists [numTemplateRoots][]uint32
	existing := false
	for r, order := range t.walk {
		if len(order) == 0 {
			continue
		}
		var old []uint32
		if p := s.nodes.at(nodes[r]).sorted.Load(); p != nil {
			old = *p
		}
		merged := make([]uint32, 0, len(old)+len(order))
		for _, p := range order {
			st := &t.stats[p]
			for len(old) > 0 {
				o := old[0]
				oseg := s.entrySegmentID(o)
				if oseg == segs[p] && entryKind(o) != kindPrefix && statKind(entryKind(o)) == statKind(st.kind) {
					found[p] = o
					existing = true
					break
				}
				if compareSiblings(s.segment(oseg), o, st.name, makeEntry(st.kind, 0)) > 0 {
					break
				}
				merged = append(merged, o)
				old = old[1:]
			}
			if found[p] != 0 {
				merged = append(merged, old[0])
				old = old[1:]
				continue
			}
			slot[p] = uint32(len(merged))
			merged = append(merged, 0)
		}
		lists[r] = append(merged, old...)
	}
	b := Block{s: s, t: t}
	if existing {
		b.ptrs = make([]any, n)
	} else {
		b.base = [numBlockSlabs]uint32{s.counters.len(), s.gauges.len(), s.hists.len(), s.lazies.len()}
	}
	var added [numTemplateRoots]bool
	// In template order, so that each slab's new stats follow their
	// ranks.
	for p := range t.stats {
		st := &t.stats[p]
		r := templateRootOf(st.kind)
		if e := found[p]; e != 0 {
			b.ptrs[p] = s.blockStat(st.kind, e)
			continue
		}
		var idx uint32
		switch st.kind {
		case KindCounter:
			idx = s.newCounter(nodes[r], segs[p])
		case KindGauge:
			idx = s.newGauge(nodes[r], segs[p])
		case KindHistogram:
			idx = s.newHistogram(nodes[r], segs[p], s.emptyFor(prefix, st.name), st.unit)
		case kindLazyCounter:
			idx = s.newLazy(nodes[r], segs[p])
		}
		e := makeEntry(st.kind, idx)
		lists[r][slot[p]] = e
		added[r] = true
		if b.ptrs != nil {
			b.ptrs[p] = s.blockStat(st.kind, e)
		}
	}
	for r := range lists {
		if !added[r] {
			continue
		}
		// A header of its own: one into lists would keep the other
		// root's list alive after that one is replaced.
		list := lists[r]
		node := s.nodes.at(nodes[r])
		node.sorted.Store(&list)
		node.listed = true
	}
	return b, true
}

// blockStat returns the stat of entry e for a template position of kind
// k: a declared counter asked for as a counter is allocated, as
// Scope.Counter does; a declared position has none. The caller holds s.mu.
func (s *Store) blockStat(k Kind, e uint32) any {
	idx := entryIndex(e)
	switch k {
	case KindCounter:
		if entryKind(e) == kindLazyCounter {
			idx = s.materialize(idx)
		}
		return s.counters.at(idx)
	case KindGauge:
		return s.gauges.at(idx)
	case KindHistogram:
		return s.hists.at(idx)
	}
	return nil
}

// templateSegments returns the segment ids of t's names in this store,
// interned on the template's first block; false when the store has no
// room for them (see maxSegments). The caller holds s.mu.
func (s *Store) templateSegments(t *Template) ([]uint32, bool) {
	if segs, ok := s.templates[t]; ok {
		return segs, true
	}
	segs := make([]uint32, len(t.stats))
	for p, st := range t.stats {
		id, _ := s.segmentID(st.name, true)
		if id > maxSegments {
			return nil, false
		}
		segs[p] = id
	}
	if s.templates == nil {
		s.templates = map[*Template][]uint32{}
	}
	s.templates[t] = segs
	return segs, true
}
