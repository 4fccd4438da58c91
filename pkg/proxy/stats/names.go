package stats

import (
	"cmp"
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
// consistent snapshot without holding the store's lock. Children added
// since the last sort wait in Store.pending. used is the same for the
// children that are used stats or prefixes holding one (see usedSet).
type prefixNode struct {
	parent  uint32
	seg     uint32
	sorted  atomic.Pointer[[]uint32]
	used    atomic.Pointer[[]uint32]
	hasUsed bool // listed in the parent's used list; guarded by usedSet.mu
	// young and listed say where the node's stats are found: the young
	// map, its sorted list, or both (see youngChildren); guarded by
	// Store.mu.
	young, listed bool
}

func (n *prefixNode) sortedList() *atomic.Pointer[[]uint32] { return &n.sorted }

func (n *prefixNode) usedList() *atomic.Pointer[[]uint32] { return &n.used }

// childAdd is a child entry waiting to be merged into a node's list.
type childAdd struct{ node, entry uint32 }

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
// last segment of prefix+name in the tree under root. prefix is empty or
// ends with a dot. It returns that node and the last segment's id; ok is
// false when create is false and the name is unknown. The caller holds
// s.mu.
func (s *Store) resolve(root uint32, prefix, name string, create bool) (parent, seg uint32, ok bool) {
	if parent, ok = s.resolvePrefix(root, prefix, create); !ok {
		return 0, 0, false
	}
	for {
		head, rest, more := strings.Cut(name, ".")
		if !more {
			id, ok := s.segmentID(head, create)
			return parent, id, ok
		}
		if parent, ok = s.resolveNode(parent, head, create); !ok {
			return 0, 0, false
		}
		name = rest
	}
}

// resolvePrefix finds, and with create also builds, the prefix node of
// prefix (empty or ending with a dot) under root. The last prefix resolved
// is remembered per root: a scope makes its stats one after another (its
// histograms and its other stats, under two roots, in turn when they are
// made as blocks), and prefix nodes are never removed, so the answer
// stays true. The caller holds s.mu.
func (s *Store) resolvePrefix(root uint32, prefix string, create bool) (uint32, bool) {
	if prefix == "" {
		return root, true
	}
	c := &s.lastPrefix[root]
	if c.valid && c.prefix == prefix {
		return c.node, true
	}
	parent, rest := root, prefix
	if c.valid {
		// The prefixes a cluster makes its scopes with one after
		// another ("cluster.<name>.", then its
		// "cluster.<name>.circuit_breakers.default." and ".high.", and
		// the next cluster's) share their first segments with the last:
		// the node of the shared part is the last prefix's node, or an
		// ancestor of it, found by climbing rather than by a lookup per
		// segment.
		parent, rest = s.sharedPrefix(c, prefix)
	}
	for rest != "" {
		head, tail, _ := strings.Cut(rest, ".")
		var ok bool
		if parent, ok = s.resolveNode(parent, head, create); !ok {
			return 0, false
		}
		rest = tail
	}
	*c = prefixCache{valid: true, prefix: prefix, node: parent}
	return parent, true
}

// sharedPrefix returns the node of the longest run of whole segments
// prefix shares with c's prefix, and the rest of prefix after it. The
// caller holds s.mu.
func (s *Store) sharedPrefix(c *prefixCache, prefix string) (uint32, string) {
	n := 0
	for n < len(prefix) && n < len(c.prefix) && prefix[n] == c.prefix[n] {
		n++
	}
	// Back to the end of the last whole segment in common (both end
	// with a dot, so a full match of either is one).
	for n > 0 && prefix[n-1] != '.' {
		n--
	}
	node := c.node
	for _, b := range []byte(c.prefix[n:]) {
		if b == '.' {
			node = s.nodes.at(node).parent
		}
	}
	return node, prefix[n:]
}

// prefixCache is the last prefix resolvePrefix resolved under one root.
type prefixCache struct {
	valid  bool
	prefix string
	node   uint32
}

// segmentID returns the id of a name segment, interning it with create.
func (s *Store) segmentID(seg string, create bool) (uint32, bool) {
	if id, ok := s.cachedSegment(seg); ok {
		return id, true
	}
	if create {
		id := s.intern(seg)
		s.cacheSegment(seg, id)
		return id, true
	}
	id, ok := s.segIDs[seg]
	if ok {
		s.cacheSegment(seg, id)
	}
	return id, ok
}

// resolveNode finds, and with create also builds, the prefix node of
// segment seg under parent. The caller holds s.mu.
func (s *Store) resolveNode(parent uint32, seg string, create bool) (uint32, bool) {
	id, ok := s.segmentID(seg, create)
	if !ok {
		return 0, false
	}
	key := makeKey(parent, id, kindPrefix)
	e, found := s.findChild(key)
	if !found {
		if !create {
			return 0, false
		}
		child, n := s.nodes.alloc()
		n.parent, n.seg = parent, id
		e = makeEntry(kindPrefix, child)
		s.insertChild(key, e)
		s.addChild(parent, e)
	}
	return entryIndex(e), true
}

// addChild records a new child of node for the next sort. The caller holds
// s.mu.
func (s *Store) addChild(node, entry uint32) {
	if entryKind(entry) == kindPrefix {
		s.pendingPrefixes = append(s.pendingPrefixes, childAdd{node, entry})
		return
	}
	s.pending = append(s.pending, childAdd{node, entry})
}

// segment returns the text of a segment id.
func (s *Store) segment(id uint32) string { return *s.segs.at(id) }

// entrySegment returns the last name segment of a child entry.
func (s *Store) entrySegment(e uint32) string { return s.segment(s.entrySegmentID(e)) }

// entrySegmentID returns the id of the last name segment of a child entry.
func (s *Store) entrySegmentID(e uint32) uint32 {
	k, idx := entryKind(e), entryIndex(e)
	if k == kindPrefix {
		return s.nodes.at(idx).seg
	}
	_, meta := s.statName(k, idx)
	return meta & metaMask
}

// compareEntries orders siblings so that a depth-first walk yields full
// names in byte order: an interior node compares as its segment followed by
// '.', a leaf as its bare segment. Plain segment order would be wrong:
// "my-svc.x" sorts before "my.x" because '-' < '.'.
func (s *Store) compareEntries(a, b uint32) int {
	return compareSiblings(s.entrySegment(a), a, s.entrySegment(b), b)
}

// compareSiblings is compareEntries given the entries' last segments sa
// and sb.
func compareSiblings(sa string, a uint32, sb string, b uint32) int {
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
	// Same name: a counter and a gauge may share one, the counter first
	// (a declared counter too); else keep creation order.
	if ka, kb := statKind(entryKind(a)), statKind(entryKind(b)); ka != kb {
		return cmp.Compare(ka, kb)
	}
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

// pendingKeep bounds the capacity of the pending list kept between sorts:
// after a burst of creations the big buffer goes back to the heap.
const pendingKeep = 4096

// sortPending merges the children added since the last call into their
// nodes' published sorted lists, and the stats used since then into the
// used lists. It allocates only when stats were added or used since the
// last call. The caller holds s.mu.
func (s *Store) sortPending() {
	s.mergePending(&s.pendingPrefixes)
	s.mergePending(&s.pending)
	s.mergeUsed()
}

// mergePending merges the children in *adds into their nodes' sorted lists
// and empties it. The caller holds s.mu.
func (s *Store) mergePending(adds *[]childAdd) {
	s.mergeChildren(*adds, (*prefixNode).sortedList)
	clear(*adds)
	*adds = (*adds)[:0]
	if cap(*adds) > pendingKeep {
		*adds = nil
	}
}

// mergeChildren sorts adds by node and, within a node, in walk order, and
// merges each node's run into the list that list selects, publishing a new
// slice so that walkers holding the old one are undisturbed. adds is
// reordered. The caller holds s.mu.
func (s *Store) mergeChildren(adds []childAdd, list func(*prefixNode) *atomic.Pointer[[]uint32]) {
	s.sortAdds(adds)
	s.mergeSorted(adds, list)
}

// mergeSorted is mergeChildren for adds already grouped by node, each
// node's in walk order.
func (s *Store) mergeSorted(adds []childAdd, list func(*prefixNode) *atomic.Pointer[[]uint32]) {
	for len(adds) > 0 {
		node := adds[0].node
		j := 1
		for j < len(adds) && adds[j].node == node {
			j++
		}
		run := adds[:j]
		adds = adds[j:]
		p := list(s.nodes.at(node))
		var old []uint32
		if cur := p.Load(); cur != nil {
			old = *cur
		}
		merged := make([]uint32, 0, len(old)+len(run))
		// Each new child's place in the old list is found by binary
		// search and the old children before it are copied in one go: a
		// few new stats of a listed node with a long list (a cluster's
		// late EDS stats) cost a few comparisons, not one per old child.
		for _, a := range run {
			i := 0
			if len(old) > 0 {
				// The new child's segment is read once, not at every
				// comparison: each read goes to the stat's own memory.
				seg := s.entrySegment(a.entry)
				i, _ = slices.BinarySearchFunc(old, a.entry, func(o, e uint32) int {
					if compareSiblings(s.entrySegment(o), o, seg, e) <= 0 {
						return -1
					}
					return 1
				})
			}
			merged = append(append(merged, old[:i]...), a.entry)
			old = old[i:]
		}
		merged = append(merged, old...)
		p.Store(&merged)
	}
}

// sortAdds groups adds by node and puts each node's run in walk order.
// Each add's segment id is read once, before the sort: the comparisons then
// read only the few hot segment strings, not the stats' memory, which a
// burst of creations has spread over megabytes. The adds are first grouped
// by node, keeping their creation order (see groupByNode), and each node's
// run is then put in walk order; a run whose names and kinds come in the
// same order as an earlier run's (the next cluster's stats, made by the
// same code) takes that run's permutation instead of being sorted again
// (see sortMemo). The order of the nodes' runs is their first add's.
func (s *Store) sortAdds(adds []childAdd) {
	if len(adds) < 2 {
		return
	}
	ks := s.groupByNode(adds)
	for rest := ks; len(rest) > 0; {
		node := rest[0].order >> 32
		j := 1
		for j < len(rest) && rest[j].order>>32 == node {
			j++
		}
		s.sortRun(rest[:j])
		rest = rest[j:]
	}
	for i, k := range ks {
		adds[i] = childAdd{uint32(k.order >> 32), k.entry}
	}
	s.memo.long = memoRun{}
	if cap(s.memo.scratch) > pendingKeep {
		s.memo.scratch = nil
	}
}

// groupByNode returns the sort keys of adds grouped by node, each node's
// in creation order, the nodes in the order of their first add. It is a
// counting sort: adds come in runs of one node (a scope's stats, made one
// after another, interleaved with its few sub-scopes' and its histograms'),
// so the node's group is looked up once per run, not once per add, and
// nothing is compared. A comparison sort of a restart's 1,024 adds cost
// about a tenth of a CDS update of 10,000 clusters.
func (s *Store) groupByNode(adds []childAdd) []sortKey {
	g := &s.groups
	clear(g.index)
	g.counts = g.counts[:0]
	if g.index == nil {
		// Sized for the runs of adds, which bound the nodes: grown one
		// insertion at a time, the map of a first render after a CDS
		// update (tens of thousands of nodes) was rehashed a dozen times.
		runs, last := 0, adds[0].node+1
		for _, a := range adds {
			if a.node != last {
				runs++
				last = a.node
			}
		}
		g.index = make(map[uint32]int32, runs)
	}
	// Each add's group, by runs of one node.
	g.of = g.of[:0]
	last, cur := adds[0].node+1, int32(0)
	for _, a := range adds {
		if a.node != last {
			var ok bool
			if cur, ok = g.index[a.node]; !ok {
				cur = int32(len(g.counts))
				g.index[a.node] = cur
				g.counts = append(g.counts, 0)
			}
			last = a.node
		}
		g.counts[cur]++
		g.of = append(g.of, cur)
	}
	// Each group's first place, then each add at its group's next one.
	at := int32(0)
	for i, n := range g.counts {
		g.counts[i] = at
		at += n
	}
	ks := make([]sortKey, len(adds))
	for i, a := range adds {
		p := &g.counts[g.of[i]]
		ks[*p] = sortKey{uint64(a.node)<<32 | uint64(i), a.entry, makeKey(0, s.entrySegmentID(a.entry), statKind(entryKind(a.entry)))[1]}
		*p++
	}
	if cap(g.of) > pendingKeep {
		g.of = nil
	}
	if len(g.counts) > pendingKeep {
		// A map cleared keeps its size, and clearing it costs as much.
		g.index, g.counts = nil, nil
	}
	return ks
}

// nodeGroups is groupByNode's scratch space, kept between calls. Guarded
// by Store.mu.
type nodeGroups struct {
	index  map[uint32]int32 // node -> group
	counts []int32          // per group: its adds, then its next place
	of     []int32          // per add: its group
}

// sortKey is an add being sorted: its node and creation position, its
// entry, and its last segment with its kind (as in a nameKey).
type sortKey struct {
	order uint64
	entry uint32
	seg   uint32
}

// sortMemo remembers the permutations that put runs of children in walk
// order, by the sequence of their segments and kinds. Walk order depends on
// nothing else (two children of one node never share both), so a run with
// the same sequence takes the same permutation. It is bounded, and cleared
// when full. Guarded by Store.mu.
type sortMemo struct {
	runs    map[uint64]*memoRun
	scratch []sortKey // a run's copy while it is permuted
	// long is the last run longer than memoMaxRun sorted by the current
	// sortAdds, dropped when it returns: the parent of thousands of
	// scopes has the same new children under each tree root that has
	// them ("cluster.<name>." for counters, histograms and text
	// readouts), so its runs repeat within one merge, never after.
	long memoRun
}

type memoRun struct {
	segs []uint32 // the run's segments and kinds in creation order
	perm []int32  // perm[i] is the creation position of the i-th in walk order
}

// Runs shorter than memoMinRun or longer than memoMaxRun (a parent of
// thousands of scopes, which does not repeat) are sorted directly; memoMax
// bounds the runs remembered, so the memo stays under a megabyte.
const (
	memoMinRun = 8
	memoMaxRun = 1024
	memoMax    = 64
)

// sortRun puts one node's run of adds, in creation order, in walk order.
func (s *Store) sortRun(run []sortKey) {
	if len(run) < 2 {
		return
	}
	cmpKeys := func(a, b sortKey) int {
		if a.seg == b.seg {
			return cmp.Compare(a.entry, b.entry)
		}
		return compareSiblings(s.segment(a.seg&metaMask), a.entry, s.segment(b.seg&metaMask), b.entry)
	}
	if len(run) > memoMaxRun {
		s.sortLongRun(run, cmpKeys)
		return
	}
	if len(run) < memoMinRun {
		slices.SortFunc(run, cmpKeys)
		return
	}
	h := uint64(14695981039346656037)
	for _, k := range run {
		h = (h ^ uint64(k.seg)) * 1099511628211
	}
	m := &s.memo
	if r, ok := m.runs[h]; ok && len(r.segs) == len(run) && slices.EqualFunc(r.segs, run, func(seg uint32, k sortKey) bool { return seg == k.seg }) {
		m.scratch = append(m.scratch[:0], run...)
		orig := m.scratch
		for i, p := range r.perm {
			run[i] = orig[p]
		}
		return
	}
	r := &memoRun{segs: make([]uint32, len(run)), perm: make([]int32, len(run))}
	for i, k := range run {
		r.segs[i] = k.seg
		run[i].order = run[i].order&^(1<<32-1) | uint64(i)
	}
	slices.SortFunc(run, cmpKeys)
	for i, k := range run {
		r.perm[i] = int32(uint32(k.order))
	}
	if m.runs == nil || len(m.runs) >= memoMax {
		m.runs = map[uint64]*memoRun{}
	}
	m.runs[h] = r
}

// sortLongRun is sortRun for a run longer than memoMaxRun: sorted, or
// given the permutation of the previous long run of the same sortAdds
// when it had the same segments and kinds in the same order.
func (s *Store) sortLongRun(run []sortKey, cmpKeys func(a, b sortKey) int) {
	m := &s.memo
	r := &m.long
	if len(r.segs) == len(run) && slices.EqualFunc(r.segs, run, func(seg uint32, k sortKey) bool { return seg == k.seg }) {
		m.scratch = append(m.scratch[:0], run...)
		orig := m.scratch
		for i, p := range r.perm {
			run[i] = orig[p]
		}
		return
	}
	r.segs, r.perm = slices.Grow(r.segs[:0], len(run))[:len(run)], slices.Grow(r.perm[:0], len(run))[:len(run)]
	for i, k := range run {
		r.segs[i] = k.seg
		run[i].order = run[i].order&^(1<<32-1) | uint64(i)
	}
	slices.SortFunc(run, cmpKeys)
	for i, k := range run {
		r.perm[i] = int32(uint32(k.order))
	}
}

// entryParent returns the parent node of a child entry.
func (s *Store) entryParent(e uint32) uint32 {
	k, idx := entryKind(e), entryIndex(e)
	if k == kindPrefix {
		return s.nodes.at(idx).parent
	}
	parent, _ := s.statName(k, idx)
	return parent
}

// depth returns how many prefix nodes lie between node and its root.
func (s *Store) depth(node uint32) int {
	d := 0
	for ; node >= numRoots; node = s.nodes.at(node).parent {
		d++
	}
	return d
}

// compareStats orders two stats of one tree as the walk meets them, which
// is the byte order of their full names, without building the names: it
// climbs to the children of their closest common ancestor and compares
// those two siblings.
func (s *Store) compareStats(a, b uint32) int {
	pa, pb := s.entryParent(a), s.entryParent(b)
	da, db := s.depth(pa), s.depth(pb)
	for ; da > db; da-- {
		a, pa = makeEntry(kindPrefix, pa), s.nodes.at(pa).parent
	}
	for ; db > da; db-- {
		b, pb = makeEntry(kindPrefix, pb), s.nodes.at(pb).parent
	}
	for pa != pb {
		a, pa = makeEntry(kindPrefix, pa), s.nodes.at(pa).parent
		b, pb = makeEntry(kindPrefix, pb), s.nodes.at(pb).parent
	}
	return s.compareEntries(a, b)
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
