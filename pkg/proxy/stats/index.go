package stats

// childIndex finds a child of a name tree node by its segment and kind. It
// is an open-addressing hash set of tree entries that reads each entry's key
// back from the entry itself (a prefix node's parent and segment, a stat's
// parent and meta word), so a slot is four bytes. A Go map of key and value
// cost 27.5 bytes per stat; this costs 8 to 16, which is what lets every
// stat carry the pointer that reports its first use (see usedset.go)
// within the memory budget. It now holds prefix nodes only: stats are found
// through the young map or their node's sorted list (young.go).
//
// Lookups and inserts happen under Store.mu, which also guards the fields
// the keys are read from.
type childIndex struct {
	slots []uint32 // tree entries; 0, the entry of root node 0, marks a free slot
	n     int      // occupied slots
}

// childIndexMinSize is the first table size: small stores stay small.
const childIndexMinSize = 64

// find returns the entry stored under key.
func (x *childIndex) find(s *Store, key nameKey) (uint32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	i, found := x.probe(s, key)
	if !found {
		return 0, false
	}
	return x.slots[i], true
}

// insert adds entry e, whose key is key; the key must not be present.
func (x *childIndex) insert(s *Store, key nameKey, e uint32) {
	// A load factor of at most one half keeps probe chains short: each
	// probe of an occupied slot of the right kind reads the stat's memory.
	if 2*(x.n+1) > len(x.slots) {
		x.grow(s)
	}
	// The key is absent, so the first free slot of its chain is the
	// one: no entry on the way needs its key read back.
	mask := len(x.slots) - 1
	i := int(hashKey(key)) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = e
	x.n++
}

// probe returns the slot holding key, or the free slot where it belongs.
func (x *childIndex) probe(s *Store, key nameKey) (int, bool) {
	mask := len(x.slots) - 1
	kind := Kind(key[1] >> entryKindShift)
	for i := int(hashKey(key)) & mask; ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == 0 {
			return i, false
		}
		if entryKind(e) == kind && s.entryKey(e) == key {
			return i, true
		}
	}
}

// grow doubles the table and re-inserts every entry.
func (x *childIndex) grow(s *Store) {
	old := x.slots
	x.slots = make([]uint32, max(2*len(old), childIndexMinSize))
	mask := len(x.slots) - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := int(hashKey(s.entryKey(e))) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = e
	}
}

// hashKey mixes a key's two words (the finaliser of MurmurHash3), so that
// the consecutive ids of siblings spread over the table.
func hashKey(k nameKey) uint64 {
	h := uint64(k[0])<<32 | uint64(k[1])
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// entryKey returns the key under which a tree entry is indexed: its parent
// node and its last segment with its kind.
func (s *Store) entryKey(e uint32) nameKey {
	k, idx := entryKind(e), entryIndex(e)
	if k == kindPrefix {
		n := s.nodes.at(idx)
		return makeKey(n.parent, n.seg, kindPrefix)
	}
	parent, meta := s.statName(k, idx)
	return makeKey(parent, meta&metaMask, k)
}

// statName returns the name words of the stat of kind k at idx: its parent
// node and its meta word (last segment and used bit).
func (s *Store) statName(k Kind, idx uint32) (parent, meta uint32) {
	switch k {
	case KindCounter:
		c := s.counters.at(idx)
		return c.parent, c.meta.Load()
	case KindGauge:
		g := s.gauges.at(idx)
		return g.parent, g.meta.Load()
	case KindTextReadout:
		t := s.texts.at(idx)
		return t.parent, t.meta.Load()
	case KindHistogram:
		h := s.hists.at(idx)
		return h.parent, h.meta.Load()
	case kindLazyCounter:
		return s.lazyName(idx)
	}
	return 0, 0
}
