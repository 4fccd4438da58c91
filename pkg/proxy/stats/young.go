package stats

// youngChildren indexes the children of the most recently created prefix
// nodes a second time, in a small map that stays in the cache. A new
// cluster, listener or route scope makes a node and then dozens of stats
// under it: each is a miss in the store's large child index, whose probes
// read other stats' memory across the whole store (cache misses). Nodes
// are numbered in creation order, so "created since the map was last
// emptied" is a comparison, and every child of such a node was added while
// the map recorded it: for those parents the map alone answers, present or
// absent. The global index receives the map's entries when it starts
// over, for later lookups.
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
	return s.index.find(s, key)
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
		// Start over: from here on only nodes created after now are
		// covered, and they have no children yet.
		for k, v := range y.children {
			s.index.insert(s, k, v)
		}
		clear(y.children)
		y.from = s.nodes.len()
		if !y.covers(key[0]) {
			s.index.insert(s, key, e)
			return
		}
	}
	y.children[key] = e
}
