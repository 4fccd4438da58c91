package stats

import "slices"

// youngChildren holds the stats made most recently, in a small map that
// stays in the cache. A new cluster, listener or route scope makes a node
// and then dozens of stats under it; each would otherwise be a miss in a
// large index whose probes read other stats' memory across the store
// (cache misses), and a slot in it (8 MB for a million stats).
//
// Stats are not in the store-wide index at all. A node's stats are in the
// map while the node is young (a stat was made under it since the map last
// started over), and in the node's sorted list once it is listed (see
// restartYoung); a node can be both, when a listed node gets a new stat.
// Every stat is in at least one of the two, so a lookup asks the map and
// then the list, and a node that is neither has no stats. Prefix nodes,
// a few per scope, are in the store-wide index.
type youngChildren struct {
	children map[nameKey]uint32 // stat key -> entry, for young parents
	// nodes are the young nodes, each once: a restart passes over them,
	// a few per scope, rather than over every stat in the map.
	nodes []uint32
}

// youngMax bounds the map: about ten clusters' stats at a time, a few tens
// of kilobytes.
const youngMax = 1024

// findChild returns the entry of the tree child under key. The caller
// holds s.mu.
func (s *Store) findChild(key nameKey) (uint32, bool) {
	if Kind(key[1]>>entryKindShift) == kindPrefix {
		return s.index.find(s, key)
	}
	n := s.nodes.at(key[0])
	if n.young {
		if e, ok := s.young.children[key]; ok {
			return e, true
		}
	}
	if n.listed {
		return s.findListed(key)
	}
	return 0, false
}

// insertChild indexes a new tree child e under key, which must be absent:
// a prefix node in the store-wide index, a stat in the young map, which
// makes its node young. When the map is full it starts over first. The
// caller holds s.mu.
func (s *Store) insertChild(key nameKey, e uint32) {
	if entryKind(e) == kindPrefix {
		s.index.insert(s, key, e)
		return
	}
	y := &s.young
	if len(y.children) >= youngMax {
		s.restartYoung()
	}
	if n := s.nodes.at(key[0]); !n.young {
		n.young = true
		y.nodes = append(y.nodes, key[0])
	}
	y.children[key] = e
}

// restartYoung empties the map. Its stats are merged into their nodes'
// sorted lists now (the first render would have done it, and finds little
// left to sort), and their nodes are listed instead of young. The caller
// holds s.mu.
func (s *Store) restartYoung() {
	y := &s.young
	for _, node := range y.nodes {
		n := s.nodes.at(node)
		n.young, n.listed = false, true
	}
	y.nodes = y.nodes[:0]
	clear(y.children)
	// The prefix nodes wait for the next render: a prefix's parent
	// (cluster., listener.) can have thousands of children, whose list is
	// better copied once per render than once per restart.
	s.mergePending(&s.pending)
}

// findListed looks for a stat child of a listed node in the node's sorted
// list, by binary search in walk order. The caller holds s.mu, under which
// the list is only replaced.
func (s *Store) findListed(key nameKey) (uint32, bool) {
	p := s.nodes.at(key[0]).sorted.Load()
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
		if statKind(entryKind(list[i])) == k {
			return list[i], true
		}
	}
	return 0, false
}
