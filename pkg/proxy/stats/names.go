package stats

import (
	"slices"
	"strings"
	"sync/atomic"
)

// The name tree has one root per rendering phase, so that each phase walks
// only its own stats: text readouts, then counters and gauges interleaved,
// then histograms.
const (
	rootTextReadouts uint32 = iota
	rootCounters            // counters and gauges
	rootHistograms
	numRoots
)

// prefixNode is an interior node of the name tree: one name segment under
// a parent. Its children are kept as an immutable sorted slice, replaced
// (never modified) when new children arrive, so a renderer walks a
// consistent snapshot without holding the store's lock, plus the children
// added since the last sort.
type prefixNode struct {
	parent  uint32
	seg     uint32
	sorted  atomic.Pointer[[]uint32]
	pending []uint32 // guarded by Store.mu
}

// intern returns the id of a name segment, storing the segment once. The
// caller holds s.mu.
func (s *Store) intern(seg string) uint32 {
	if id, ok := s.segIDs[seg]; ok {
		return id
	}
	seg = strings.Clone(seg) // do not pin the caller's whole name
	id, p := s.segs.alloc()
	*p = seg
	s.segIDs[seg] = id
	return id
}

// resolve finds, and with create also builds, the prefix node holding the
// last segment of name in the tree under root. It returns that node and
// the last segment's id; ok is false when create is false and the name is
// unknown. The caller holds s.mu.
func (s *Store) resolve(root uint32, name string, create bool) (parent, seg uint32, ok bool) {
	parent = root
	for {
		head, rest, more := strings.Cut(name, ".")
		var id uint32
		if create {
			id = s.intern(head)
		} else if id, ok = s.segIDs[head]; !ok {
			return 0, 0, false
		}
		if !more {
			return parent, id, true
		}
		key := makeKey(parent, id, kindPrefix)
		child, found := s.index[key]
		if !found {
			if !create {
				return 0, 0, false
			}
			var n *prefixNode
			child, n = s.nodes.alloc()
			n.parent, n.seg = parent, id
			s.index[key] = child
			s.addChild(parent, makeEntry(kindPrefix, child))
		}
		parent, name = child, rest
	}
}

// addChild records a new child of node for the next sort. The caller holds
// s.mu.
func (s *Store) addChild(node, entry uint32) {
	n := s.nodes.at(node)
	if len(n.pending) == 0 {
		s.dirty = append(s.dirty, node)
	}
	n.pending = append(n.pending, entry)
}

// segment returns the text of a segment id.
func (s *Store) segment(id uint32) string { return *s.segs.at(id) }

// entrySegment returns the last name segment of a child entry.
func (s *Store) entrySegment(e uint32) string {
	idx := entryIndex(e)
	var meta uint32
	switch entryKind(e) {
	case kindPrefix:
		return s.segment(s.nodes.at(idx).seg)
	case KindCounter:
		meta = s.counters.at(idx).meta.Load()
	case KindGauge:
		meta = s.gauges.at(idx).meta.Load()
	case KindTextReadout:
		meta = s.texts.at(idx).meta.Load()
	case KindHistogram:
		meta = s.hists.at(idx).meta.Load()
	}
	return s.segment(meta & metaMask)
}

// compareEntries orders siblings so that a depth-first walk yields full
// names in byte order: an interior node compares as its segment followed by
// '.', a leaf as its bare segment. Plain segment order would be wrong:
// "my-svc.x" sorts before "my.x" because '-' < '.'.
func (s *Store) compareEntries(a, b uint32) int {
	sa, sb := s.entrySegment(a), s.entrySegment(b)
	da, db := entryKind(a) == kindPrefix, entryKind(b) == kindPrefix
	n := min(len(sa), len(sb))
	if c := strings.Compare(sa[:n], sb[:n]); c != 0 {
		return c
	}
	switch {
	case len(sa) < len(sb):
		if !da {
			return -1
		}
		return cmpByte('.', sb[n])
	case len(sa) > len(sb):
		if !db {
			return 1
		}
		return cmpByte(sa[n], '.')
	case da != db:
		if da {
			return 1
		}
		return -1
	}
	// Same name: a counter and a gauge may share one; keep creation order.
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func cmpByte(a, b byte) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortPending merges every node's new children into its published sorted
// slice. It allocates only when stats were added since the last call. The
// caller holds s.mu.
func (s *Store) sortPending() {
	for _, id := range s.dirty {
		n := s.nodes.at(id)
		slices.SortFunc(n.pending, s.compareEntries)
		var old []uint32
		if p := n.sorted.Load(); p != nil {
			old = *p
		}
		merged := make([]uint32, 0, len(old)+len(n.pending))
		i, j := 0, 0
		for i < len(old) && j < len(n.pending) {
			if s.compareEntries(old[i], n.pending[j]) <= 0 {
				merged = append(merged, old[i])
				i++
			} else {
				merged = append(merged, n.pending[j])
				j++
			}
		}
		merged = append(merged, old[i:]...)
		merged = append(merged, n.pending[j:]...)
		n.sorted.Store(&merged)
		n.pending = nil
	}
	s.dirty = s.dirty[:0]
}

// appendNodeName appends the full name of a prefix node, with its trailing
// dot, to buf.
func (s *Store) appendNodeName(buf []byte, node uint32) []byte {
	if node < numRoots {
		return buf
	}
	n := s.nodes.at(node)
	buf = s.appendNodeName(buf, n.parent)
	buf = append(buf, s.segment(n.seg)...)
	return append(buf, '.')
}

// appendName appends a stat's full name, given its parent node and meta word.
func (s *Store) appendName(buf []byte, parent, meta uint32) []byte {
	buf = s.appendNodeName(buf, parent)
	return append(buf, s.segment(meta&metaMask)...)
}
