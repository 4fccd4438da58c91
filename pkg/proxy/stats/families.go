package stats

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// familyIndex groups each kind's stats into Prometheus metric families and
// keeps the grouping in the store, so that a scrape walks family by family
// without extracting every name twice and grouping it in a map it then
// throws away (17.5 MB per scrape of a million stats before the index).
//
// Stats never leave a store, so the index only grows. Each render first
// places the stats created since the previous one, one tag extraction
// each, under mu; it then reads published, immutable snapshots with no lock
// held, so a slow client delays neither stat creation nor other renders.
type familyIndex struct {
	mu    sync.Mutex
	kinds [KindHistogram + 1]kindFamilies // by Kind
	x     Extraction                      // scratch, under mu
	name  []byte                          // scratch, under mu
}

// kindFamilies are the families of one kind.
type kindFamilies struct {
	placed uint32 // slab indexes below it are placed; under mu
	// placedLazy is placed for the declared counters (see lazy.go),
	// which are counters' family members too; under mu.
	placedLazy uint32
	ids        map[string]*promFamily // by name; under mu
	changed    []*promFamily          // families with new members; under mu
	sorted     atomic.Pointer[[]*promFamily]
}

// promFamily is one metric family: its names and its stats' tree entries
// (kind and slab index) in full-name order.
type promFamily struct {
	name    string // in the default naming, the index's key
	names   [NamingEnvoy + 1]string
	stat    string // the tag-extracted stat name, dotted
	members atomic.Pointer[[]uint32]
	adds    []uint32 // members being placed; under familyIndex.mu
}

// rebuildRatio decides how new stats are placed: one in rebuildRatio of
// those already placed, or more, and the index is rebuilt from a walk of
// the sorted tree (linear, and the walk yields each family's members in
// order); fewer, and they are sorted and merged into their families.
const rebuildRatio = 8

// promFamilies brings the index of kind k up to date and returns its
// families sorted by name. The result is shared and never modified.
func (s *Store) promFamilies(k Kind) ([]*promFamily, error) {
	fi := &s.families
	fi.mu.Lock()
	defer fi.mu.Unlock()
	kf := &fi.kinds[k]
	s.mu.Lock()
	n := s.slabLen(k)
	var nl uint32
	if k == KindCounter {
		nl = s.lazies.len()
	}
	s.mu.Unlock()
	if n != kf.placed || nl != kf.placedLazy {
		if kf.ids == nil {
			kf.ids = map[string]*promFamily{}
		}
		grown := len(kf.ids)
		if n-kf.placed+nl-kf.placedLazy >= (kf.placed+kf.placedLazy)/rebuildRatio {
			if err := fi.rebuild(s, k, n, nl); err != nil {
				return nil, err
			}
		} else {
			fi.place(s, k, n, nl)
		}
		if len(kf.ids) != grown || kf.sorted.Load() == nil {
			all := make([]*promFamily, 0, len(kf.ids))
			for _, f := range kf.ids {
				all = append(all, f)
			}
			slices.SortFunc(all, func(a, b *promFamily) int { return cmp.Compare(a.name, b.name) })
			kf.sorted.Store(&all)
		}
	}
	if p := kf.sorted.Load(); p != nil {
		return *p, nil
	}
	return nil, nil
}

// family returns the family of a stat's full name, creating it. The caller
// holds fi.mu.
func (fi *familyIndex) family(s *Store, kf *kindFamilies, name []byte) *promFamily {
	s.tags.Extract(name, &fi.x)
	fi.name = appendSanitized(append(fi.name[:0], NamingProxy.word()+"_"...), fi.x.Name)
	f := kf.ids[string(fi.name)]
	if f == nil {
		f = &promFamily{name: string(fi.name), stat: string(fi.x.Name)}
		f.names[NamingProxy] = f.name
		f.names[NamingEnvoy] = NamingEnvoy.metricName(fi.x.Name)
		kf.ids[f.name] = f
	}
	if len(f.adds) == 0 {
		kf.changed = append(kf.changed, f)
	}
	return f
}

// rebuild places every stat of kind k below n (and every declared counter
// below nl) again, in walk order, which is each family's member order. The
// caller holds fi.mu.
func (fi *familyIndex) rebuild(s *Store, k Kind, n, nl uint32) error {
	kf := &fi.kinds[k]
	err := s.Visit(VisitOptions{Type: typeOfKind(k)}, func(st *Stat) error {
		limit := n
		if entryKind(st.entry) == kindLazyCounter {
			limit = nl
		}
		if entryIndex(st.entry) < limit { // newer stats wait for the next render
			f := fi.family(s, kf, st.Name)
			f.adds = append(f.adds, st.entry)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range kf.changed {
		members := f.adds
		f.members.Store(&members)
		f.adds = nil
	}
	kf.changed = kf.changed[:0]
	kf.placed, kf.placedLazy = n, nl
	return nil
}

// place merges the stats of kind k from kf.placed to n, and the declared
// counters from kf.placedLazy to nl, into their families. A counter that
// a declared counter points at is listed through it, not placed. The
// caller holds fi.mu.
func (fi *familyIndex) place(s *Store, k Kind, n, nl uint32) {
	kf := &fi.kinds[k]
	add := func(e uint32) {
		parent, meta := s.statName(entryKind(e), entryIndex(e))
		fi.name = s.appendName(fi.name[:0], parent, meta)
		f := fi.family(s, kf, fi.name)
		f.adds = append(f.adds, e)
	}
	for idx := kf.placed; idx < n; idx++ {
		if k == KindCounter && s.counters.at(idx).meta.Load()&detachedBit != 0 {
			continue
		}
		add(makeEntry(k, idx))
	}
	for idx := kf.placedLazy; idx < nl; idx++ {
		add(makeEntry(kindLazyCounter, idx))
	}
	byName := s.compareStats
	for _, f := range kf.changed {
		slices.SortFunc(f.adds, byName)
		var old []uint32
		if p := f.members.Load(); p != nil {
			old = *p
		}
		merged := make([]uint32, 0, len(old)+len(f.adds))
		for _, idx := range f.adds {
			at, _ := slices.BinarySearchFunc(old, idx, byName)
			merged = append(append(merged, old[:at]...), idx)
			old = old[at:]
		}
		merged = append(merged, old...)
		f.members.Store(&merged)
		f.adds = nil
	}
	kf.changed = kf.changed[:0]
	kf.placed, kf.placedLazy = n, nl
}

// slabLen returns the number of stats of kind k. The caller holds s.mu.
func (s *Store) slabLen(k Kind) uint32 {
	switch k {
	case KindCounter:
		return s.counters.len()
	case KindGauge:
		return s.gauges.len()
	case KindTextReadout:
		return s.texts.len()
	case KindHistogram:
		return s.hists.len()
	}
	return 0
}
