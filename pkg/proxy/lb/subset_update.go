package lb

import (
	"maps"
	"math/bits"
	"slices"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Update returns the subset balancer of priorities, a host set that
// replaced s's by ch (nil when the change is not known), as Envoy's subset
// load balancer updates its subsets: a subset none of whose hosts came or
// went keeps its balancer (and so its round robin's place); one that
// gained or lost hosts updates its balancer from that change
// (Balancer.Update); subsets that appear or disappear are created or
// removed (lb_subsets_created, lb_subsets_removed). A host's metadata
// never changes (an endpoint whose metadata changed is a new host), so
// the subsets a change touches are those of its added and removed hosts,
// and the work is in proportion to them and to the levels they are in.
//
// Without a known change (a health change, the local cluster's hosts, a
// first set), or with locality weighting or zone routing in the subsets
// (whose localities are the whole set's), every subset is built again
// from its hosts, carrying on from the balancer it replaces
// (NewSubsetBalancer). s may be nil (no previous set).
func (s *SubsetBalancer) Update(priorities [][]*upstream.Host, ch *Change, sc *SubsetConfig, cfg Config) *SubsetBalancer {
	if s == nil || ch == nil || s.cfg != sc {
		return NewSubsetBalancer(priorities, sc, cfg, s)
	}
	childCfg := sc.childConfig(priorities, cfg)
	if childCfg.subsetOf != nil {
		if cfg.Zone != nil && !touchesLevel(ch, 0) {
			// Envoy regenerates zone routing on a change of priority 0
			// (or of the local cluster) only.
			cfg.zoneUnchanged = true
		}
		return NewSubsetBalancer(priorities, sc, cfg, s)
	}
	n := len(priorities)
	ns := &SubsetBalancer{
		cfg: sc, stats: cfg.Stats, subsets: maps.Clone(s.subsets), selectors: s.selectors,
		settled: settledWithOf(n, cfg), levels: priorities, duplicates: resized(s.duplicates, n),
	}
	same := ns.settled == s.settled

	// The subsets the change touches, with their hosts that came and
	// went; and default_subset's.
	touches := map[string]*subsetTouch{}
	var def subsetTouch
	note := func(h *upstream.Host, sign int) {
		for _, hit := range sc.hostSubsets(h) {
			t := touches[hit.key]
			if t == nil {
				t = &subsetTouch{single: hit.single}
				touches[hit.key] = t
			}
			t.note(h, sign, hit.count)
		}
		if s.def != nil && labelsMatch(sc.DefaultSubset, h, sc.ListAsAny) {
			def.note(h, sign, 0)
		}
	}
	last := -1
	for _, h := range ch.Removed {
		note(h, -1)
		last = max(last, int(h.Priority))
	}
	for _, h := range ch.Added {
		if int(h.Priority) >= n {
			continue
		}
		note(h, 1)
		last = max(last, int(h.Priority))
	}

	// The new host lists of the touched levels of the touched subsets,
	// found in one pass over each such level.
	jobs := newLevelJobs(n)
	entries := make(map[string]*subsetEntry, len(touches))
	for key, t := range touches {
		old := s.subsets[key]
		e := &subsetEntry{}
		if old != nil {
			e.levels = resized(old.levels, n)
			if old.hits != nil {
				e.hits = resized(old.hits, n)
			}
		} else {
			e.levels = make([][]*upstream.Host, n)
			if t.single {
				e.hits = make([]int, n)
			}
		}
		t.plan(e, jobs)
		entries[key] = e
	}
	var defEntry *subsetEntry
	if s.def != nil {
		defEntry = &subsetEntry{levels: resized(s.defLevels, n)}
		def.plan(defEntry, jobs)
	}
	jobs.run(priorities)

	created, removed := 0, 0
	for key, e := range entries {
		old, t := s.subsets[key], touches[key]
		if e.empty() {
			delete(ns.subsets, key)
			if old != nil {
				removed++
			}
		} else {
			if old == nil {
				created++
			}
			e.settle(old, t.change(n), childCfg)
			ns.subsets[key] = e
		}
		if e.hits != nil {
			for p := range ns.duplicates {
				ns.duplicates[p] += e.duplicates(p)
				if old != nil {
					ns.duplicates[p] -= old.duplicates(p)
				}
			}
		}
	}
	if !same {
		// The loads' settings or the number of levels changed: the
		// subsets left alone settle again, keeping their pickers.
		for key, old := range s.subsets {
			if _, ok := entries[key]; ok {
				continue
			}
			e := &subsetEntry{levels: resized(old.levels, n)}
			if old.hits != nil {
				e.hits = resized(old.hits, n)
			}
			e.settle(old, &Change{}, childCfg)
			ns.subsets[key] = e
		}
	}

	if s.any != nil {
		ns.any = s.any.Update(priorities, ch, childCfg)
	}
	if s.def != nil {
		ns.defLevels = defEntry.levels
		switch {
		case def.touched():
			ns.def = s.def.Update(ns.defLevels, def.change(n), childCfg)
		case same:
			ns.def = s.def
		default:
			ns.def = s.def.Update(ns.defLevels, &Change{}, childCfg)
		}
	}
	ns.pickFallbacks()
	ns.count(created, removed, last)
	return ns
}

// subsetTouch is what a change does to one subset: the hosts it gains
// and loses, and for a single-host subset its hits' change per level.
type subsetTouch struct {
	added, removed []*upstream.Host
	single         bool
	hits           map[int]int
}

// note records a host added (sign 1) or removed (-1) that falls count
// times in the subset.
func (t *subsetTouch) note(h *upstream.Host, sign, count int) {
	if sign > 0 {
		t.added = append(t.added, h)
	} else {
		t.removed = append(t.removed, h)
	}
	if t.single {
		if t.hits == nil {
			t.hits = map[int]int{}
		}
		t.hits[int(h.Priority)] += sign * count
	}
}

// touched reports whether any host came or went.
func (t *subsetTouch) touched() bool { return len(t.added)+len(t.removed) > 0 }

// change is the subset's Change, its added hosts below n levels.
func (t *subsetTouch) change(n int) *Change {
	ch := &Change{Removed: t.removed}
	for _, h := range t.added {
		if int(h.Priority) < n {
			ch.Added = append(ch.Added, h)
		}
	}
	return ch
}

// plan asks for the new host lists of e's levels that the touch changes
// (e.levels holds the old ones) and applies its hits.
func (t *subsetTouch) plan(e *subsetEntry, jobs *levelJobs) {
	n := len(e.levels)
	for p, d := range t.hits {
		if p < len(e.hits) {
			e.hits[p] += d
		}
	}
	var levels []bool // the levels planned already
	add := func(h *upstream.Host) {
		p := int(h.Priority)
		if p >= n {
			return
		}
		if levels == nil {
			levels = make([]bool, n)
		}
		if levels[p] {
			return
		}
		levels[p] = true
		// The old hosts still there and the added ones, in the level's
		// order: the removed ones are not in the level any more.
		jobs.add(p, &e.levels[p], e.levels[p])
	}
	for _, h := range t.removed {
		add(h)
	}
	for _, h := range t.added {
		add(h)
	}
	// The added hosts are candidates of their level's job too.
	for _, h := range t.added {
		if p := int(h.Priority); p < n {
			jobs.candidate(p, h)
		}
	}
}

// levelJobs fill the new host lists of touched subsets: per level, the
// lists to fill, each from its candidates, in the level's order.
type levelJobs struct {
	levels [][]levelJob
}

// levelJob is one list to fill: target gets the candidates found in the
// level, in its order.
type levelJob struct {
	target     *[]*upstream.Host
	candidates []*upstream.Host
}

func newLevelJobs(n int) *levelJobs {
	return &levelJobs{levels: make([][]levelJob, n)}
}

// add asks for target's list at level p, from candidates (the old list).
func (j *levelJobs) add(p int, target *[]*upstream.Host, candidates []*upstream.Host) {
	j.levels[p] = append(j.levels[p], levelJob{target: target, candidates: candidates})
}

// candidate adds h to the candidates of the last job added at level p:
// a touch plans its levels, then adds its candidates, before the next
// touch plans, so that job is the touch's own.
func (j *levelJobs) candidate(p int, h *upstream.Host) {
	jobs := j.levels[p]
	last := &jobs[len(jobs)-1]
	// A fresh slice: the old list is shared with the balancer it built.
	last.candidates = append(last.candidates[:len(last.candidates):len(last.candidates)], h)
}

// run fills every job's list: one pass over each level with jobs, which
// keeps the candidates it meets, in the level's order.
func (j *levelJobs) run(priorities [][]*upstream.Host) {
	for p, jobs := range j.levels {
		if len(jobs) == 0 {
			continue
		}
		if len(jobs) > 64 {
			// Too many for one mask: a pass per job.
			for i := range jobs {
				filterLevel(priorities[p], jobs[i:i+1])
			}
			continue
		}
		filterLevel(priorities[p], jobs)
	}
}

// filterLevel fills up to 64 jobs' lists in one pass over level.
func filterLevel(level []*upstream.Host, jobs []levelJob) {
	want := map[*upstream.Host]uint64{}
	for i, job := range jobs {
		for _, h := range job.candidates {
			want[h] |= 1 << i
		}
	}
	lists := make([][]*upstream.Host, len(jobs))
	for _, h := range level {
		mask := want[h]
		for mask != 0 {
			i := bits.TrailingZeros64(mask)
			mask &^= 1 << i
			lists[i] = append(lists[i], h)
		}
	}
	for i, job := range jobs {
		*job.target = lists[i]
	}
}

// resized is a copy of s with n elements: cut, or padded with zero
// values.
func resized[T any](s []T, n int) []T {
	out := make([]T, n)
	copy(out, s)
	return out
}

// lastChanged is the last level whose hosts differ between prev's set
// and priorities: every level for a first set, -1 when none differs (a
// health change).
func lastChanged(prev *SubsetBalancer, priorities [][]*upstream.Host) int {
	if prev == nil {
		return len(priorities) - 1
	}
	for p := max(len(prev.levels), len(priorities)) - 1; p >= 0; p-- {
		var a, b []*upstream.Host
		if p < len(prev.levels) {
			a = prev.levels[p]
		}
		if p < len(priorities) {
			b = priorities[p]
		}
		if !slices.Equal(a, b) {
			return p
		}
	}
	return -1
}
