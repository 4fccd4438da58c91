package stats

import (
	"sync"
	"sync/atomic"
)

// usedSet collects the stats that became used since the last render, so
// that /stats?usedonly walks only used stats and the prefixes leading to
// them, not every stat. Every node of the name tree keeps, beside its
// sorted children, the sorted list of its children that are used stats or
// prefixes holding one; a stat's first write queues it, and each ancestor
// not yet listed, here, and the next render merges the queue into those
// lists (see Store.sortPending).
//
// It has its own lock, not Store.mu, so that a first write on the request
// path never waits for stat creation or for a render sorting new stats.
type usedSet struct {
	mu sync.Mutex
	// pending are the keys of the stats and prefix nodes to add to their
	// parent's used list: a stat or node may only be queued once, which
	// the used bit and prefixNode.hasUsed ensure.
	pending []nameKey
}

// markUsed sets the used bit of a stat of kind k whose name is (parent,
// meta), and queues it for the used lists of s. A nil s is a stat outside
// the name tree (rejected by the stats matcher): only the bit is set.
func markUsed(s *Store, k Kind, parent uint32, meta *atomic.Uint32) {
	if s == nil {
		meta.Or(usedBit)
		return
	}
	u := &s.used
	u.mu.Lock()
	defer u.mu.Unlock()
	m := meta.Load()
	if m&usedBit != 0 {
		return // another goroutine's first write won
	}
	meta.Or(usedBit)
	u.pending = append(u.pending, makeKey(parent, m&metaMask, k))
	for parent >= numRoots {
		n := s.nodes.at(parent)
		if n.hasUsed {
			break
		}
		n.hasUsed = true
		u.pending = append(u.pending, makeKey(n.parent, n.seg, kindPrefix))
		parent = n.parent
	}
}

// mergeUsed moves the stats and nodes queued by markUsed into their
// parents' used lists. The caller holds s.mu, which the index lookup and
// the sort need.
func (s *Store) mergeUsed() {
	s.used.mu.Lock()
	keys := s.used.pending
	s.used.pending = nil
	s.used.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	adds := make([]childAdd, 0, len(keys))
	for _, k := range keys {
		// Every queued key can be found (the index, the young map or its
		// node's sorted list): its stat or node was created, under s.mu,
		// before a pointer to it could be written through.
		if e, ok := s.findChild(k); ok {
			adds = append(adds, childAdd{node: k[0], entry: e})
		}
	}
	s.mergeChildren(adds, (*prefixNode).usedList)
}
