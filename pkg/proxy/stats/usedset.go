package stats

import (
	"cmp"
	"slices"
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
// parents' used lists. The caller holds s.mu, which the lookups and the
// sort need, and has merged the pending children (see sortPending), so
// every queued stat or node is in its parent's sorted list.
//
// The keys are taken by parent. A parent with few of its children queued
// (a stat that became used in a settled scope) has each found by binary
// search in its sorted list, as a lookup does, and the finds are then put
// in walk order. One with many queued for its list's length (a new
// cluster's scope, whose first updates used a tenth of its stats; the
// clusters' parent, all of whose new clusters hold a used stat) has its
// sorted list read once instead: the children whose keys are queued come
// out in walk order, with none of the searches' probes, each a read of
// another stat's memory, nor a sort.
func (s *Store) mergeUsed() {
	s.used.mu.Lock()
	keys := s.used.pending
	s.used.pending = nil
	s.used.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, func(a, b nameKey) int { return cmp.Compare(a[0], b[0]) })
	var found, walked []childAdd
	var words []uint32
	for len(keys) > 0 {
		node := keys[0][0]
		j := 1
		for j < len(keys) && keys[j][0] == node {
			j++
		}
		run := keys[:j]
		keys = keys[j:]
		var list []uint32
		if p := s.nodes.at(node).sorted.Load(); p != nil {
			list = *p
		}
		if len(run)*usedScanRatio >= len(list) {
			words = words[:0]
			for _, k := range run {
				words = append(words, k[1])
			}
			slices.Sort(words)
			for _, e := range list {
				w := makeKey(0, s.entrySegmentID(e), statKind(entryKind(e)))[1]
				if _, ok := slices.BinarySearch(words, w); ok {
					walked = append(walked, childAdd{node: node, entry: e})
				}
			}
			continue
		}
		for _, k := range run {
			// Every queued key can be found (the index, the young map or
			// its node's sorted list): its stat or node was created, under
			// s.mu, before a pointer to it could be written through.
			if e, ok := s.findChild(k); ok {
				found = append(found, childAdd{node: node, entry: e})
			}
		}
	}
	s.mergeChildren(found, (*prefixNode).usedList)
	s.mergeSorted(walked, (*prefixNode).usedList)
}

// usedScanRatio is the length of a sorted list, per queued child, up to
// which mergeUsed reads the whole list rather than search it for each:
// a search costs about log2 of the length in probes, each a cache miss,
// where the read goes through the children in the order they were made.
const usedScanRatio = 8
