package stats

import "slices"

// youngChildren indexes the children of the most recently created prefix
// nodes a second time, in a small map that stays in the cache. A new
// cluster, listener or route scope makes a node and then dozens of stats
// under it: each is a miss in the store's large child index, whose probes
// read other stats' memory across the whole store (cache misses). Nodes
// are numbered in creation order, so "created since the map was last
// emptied" is a comparison, and every child of such a node was added while
// the map recorded it: for those parents the map alone answers, present or
// absent. When it starts over, the store-wide index receives its prefix
// nodes and its stats go into their nodes' sorted lists (restartYoung).
type youngChildren struct {
	from     uint32             // first node id the map covers
	children map[nameKey]uint32 // child key -> entry, for parents >= from
}

// youngMax bounds the map: about one large scope's worth of stats at a
// time, a few tens of kilobytes.
const youngMax = 1024

// covers reports whether every child of parent is in the map.
func (y *youngChildren) covers(parent uint32) bool { return parent >= y.from && y.children != nil }

// findChild returns the entry of the tree child under key. The caller
// holds s.mu.
func (s *Store) findChild(key nameKey) (uint32, bool) {
	if s.young.covers(key[0]) {
		e, ok := s.young.children[key]
		return e, ok
	}
	if e, ok := s.index.find(s, key); ok {
		return e, true
	}
	if Kind(key[1]>>entryKindShift) == kindPrefix {
		return 0, false
	}
	return s.findListed(key)
}

// insertChild indexes a new tree child e under key, which must be absent.
// A child of a covered node goes into the map alone; the map's entries move
// to the store-wide index together when it starts over, in one tight loop
// whose cache misses overlap. The caller holds s.mu.
func (s *Store) insertChild(key nameKey, e uint32) {
	y := &s.young
	if !y.covers(key[0]) {
		s.index.insert(s, key, e)
		return
	}
	if len(y.children) >= youngMax {
		s.restartYoung()
		if !y.covers(key[0]) {
			s.index.insert(s, key, e)
			return
		}
	}
	y.children[key] = e
}

// restartYoung empties the map: from here on only nodes created after now
// are covered, and they have no children yet. The prefix nodes it held move
// to the store-wide index. Its stats do not: they are merged into their
// nodes' sorted lists now (the first render would have done it), and those
// nodes are marked listed, so that a later lookup finds them there (see
// findListed). A cluster's 90 stats thus cost no slot in the index, whose
// table of a million stats is 8 MB, and the first render has little left
// to sort. The caller holds s.mu.
func (s *Store) restartYoung() {
	y := &s.young
	for k, v := range y.children {
		if entryKind(v) == kindPrefix {
			s.index.insert(s, k, v)
		} else {
			s.nodes.at(k[0]).listed = true
		}
	}
	clear(y.children)
	y.from = s.nodes.len()
	s.mergePendingStats()
}

// mergePendingStats merges the pending stat children into their nodes'
// sorted lists and keeps the pending prefix nodes for the next render: a
// prefix's parent (cluster., listener.) can have thousands of children,
// whose list is better copied once per render than once per restart. The
// caller holds s.mu.
func (s *Store) mergePendingStats() {
	stats := make([]childAdd, 0, len(s.pending))
	prefixes := s.pending[:0]
	for _, a := range s.pending {
		if entryKind(a.entry) == kindPrefix {
			prefixes = append(prefixes, a)
		} else {
			stats = append(stats, a)
		}
	}
	clear(s.pending[len(prefixes):])
	s.pending = prefixes
	s.mergeChildren(stats, (*prefixNode).sortedList)
}

// findListed looks for a stat child of a listed node in the node's sorted
// list, by binary search in walk order. The caller holds s.mu, under which
// the list is only replaced.
func (s *Store) findListed(key nameKey) (uint32, bool) {
	n := s.nodes.at(key[0])
	if !n.listed {
		return 0, false
	}
	p := n.sorted.Load()
	if p == nil {
		return 0, false
	}
	list := *p
	seg := key[1] & metaMask
	k := Kind(key[1] >> entryKindShift)
	name := s.segment(seg)
	// A leaf of this kind and index 0 sorts first among the children of
	// its name, so the search lands on the first of them; a counter and a
	// gauge may share the name, and a prefix follows them.
	target := makeEntry(k, 0)
	i, _ := slices.BinarySearchFunc(list, target, func(e, t uint32) int {
		return compareSiblings(s.entrySegment(e), e, name, t)
	})
	for ; i < len(list) && s.entrySegmentID(list[i]) == seg; i++ {
		if entryKind(list[i]) == k {
			return list[i], true
		}
	}
	return 0, false
}
