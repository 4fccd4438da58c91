package stats

import (
	"fmt"
	"testing"
)

// TestChildIndexFindsEveryStat creates enough stats of every kind, under
// shared and distinct prefixes, to grow the index many times, and checks
// that each name still finds its own stat and nothing else.
func TestChildIndexFindsEveryStat(t *testing.T) {
	s := NewStore()
	const n = 3000
	name := func(i int) string { return fmt.Sprintf("cluster.c%d.s%d", i%37, i) }
	counters := make([]*Counter, n)
	gauges := make([]*Gauge, n)
	hists := make([]*Histogram, n/10)
	for i := range n {
		counters[i] = s.Counter(name(i))
		gauges[i] = s.Gauge(name(i)) // same name, other kind: a distinct stat
		if i%10 == 0 {
			hists[i/10] = s.Histogram(name(i))
		}
	}
	if len(s.index.slots) < 2*s.index.n {
		t.Fatalf("index holds %d entries in %d slots, above half full", s.index.n, len(s.index.slots))
	}
	for i := range n {
		if c := s.Counter(name(i)); c != counters[i] {
			t.Fatalf("Counter(%q) returned another counter after growth", name(i))
		}
		if g := s.Gauge(name(i)); g != gauges[i] {
			t.Fatalf("Gauge(%q) returned another gauge after growth", name(i))
		}
		if i%10 == 0 && s.Histogram(name(i)) != hists[i/10] {
			t.Fatalf("Histogram(%q) returned another histogram after growth", name(i))
		}
	}
	for i, c := range counters {
		var buf []byte
		if got := string(s.appendName(buf, c.parent, c.meta.Load())); got != name(i) {
			t.Fatalf("counter %d is named %q, want %q", i, got, name(i))
		}
	}
	if got := len(s.CounterNames()); got != n {
		t.Errorf("%d counters listed, want %d", got, n)
	}
}

// TestChildIndexMisses checks lookups of absent keys in a full-ish table:
// they must stop at a free slot, not loop or report a neighbour.
func TestChildIndexMisses(t *testing.T) {
	s := NewStore()
	// The index holds prefix nodes: a.b0. to a.b39., each with a stat.
	for i := range 40 {
		s.Counter(fmt.Sprintf("a.b%d.c", i))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cases := map[string]nameKey{
		"unknown parent":            makeKey(1<<20, 1, KindCounter),
		"unknown segment":           makeKey(rootCounters, 1<<20, kindPrefix),
		"right name, wrong kind":    makeKey(numRoots, s.segIDs["b3"], KindGauge),
		"a stat of a prefix's name": makeKey(numRoots, s.segIDs["b3"], KindCounter),
	}
	for name, key := range cases {
		t.Run(name, func(t *testing.T) {
			if e, ok := s.index.find(s, key); ok {
				t.Errorf("find(%v) = entry %#x, want absent", key, e)
			}
		})
	}
	if _, ok := s.index.find(s, makeKey(numRoots, s.segIDs["b3"], kindPrefix)); !ok {
		t.Error("present key not found")
	}
}
