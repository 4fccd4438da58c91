package stats

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestYoungChildrenRestart checks that the map of the newest nodes'
// children answers exactly as the store-wide index does, across its
// restarts: every stat is found again as the same stat, whether its node
// is still covered or was made before the last restart, and a new stat of
// an old node is not mistaken for an existing one.
func TestYoungChildrenRestart(t *testing.T) {
	s := NewStore()
	const scopes, each = 60, 40 // 2,400 children: the map restarts twice
	got := map[string]*Counter{}
	for i := range scopes {
		sc := s.Scope("cluster.c" + strconv.Itoa(i) + ".")
		for j := range each {
			name := "stat_" + strconv.Itoa(j)
			got[sc.Prefix()+name] = sc.Counter(name)
			// A child prefix of a covered node, made between its stats.
			if j == each/2 {
				sc.Gauge("circuit_breakers.default.cx_open")
			}
		}
	}
	s.mu.Lock()
	first, newest := s.nodes.at(numRoots+1), s.nodes.at(s.nodes.len()-3) // cluster.c59., then its two circuit_breakers nodes
	if !first.listed || first.young {
		t.Fatalf("the map never restarted (%d children)", len(s.young.children))
	}
	if !newest.young {
		t.Fatal("the newest scope's node is not young")
	}
	s.mu.Unlock()
	for name, c := range got {
		if again := s.Counter(name); again != c {
			t.Fatalf("%s: a second lookup gave another counter", name)
		}
	}
	// New stats under nodes from before the last restart, and under the
	// newest: both must be created once.
	for _, prefix := range []string{"cluster.c0.", "cluster.c" + strconv.Itoa(scopes-1) + "."} {
		a := s.Counter(prefix + "late")
		if b := s.Counter(prefix + "late"); a != b {
			t.Fatalf("%slate: created twice", prefix)
		}
	}
	names := s.CounterNames()
	if want := scopes*each + 2; len(names) != want {
		t.Fatalf("%d counters listed, want %d", len(names), want)
	}
	if n := len(s.GaugeNames()); n != scopes {
		t.Fatalf("%d gauges listed, want %d", n, scopes)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("counters out of order or repeated: %q then %q", names[i-1], names[i])
		}
	}
}

// TestScopePrefixRemembered checks the remembered scope prefix across
// roots and scopes: stats of one scope made between another scope's, and
// a histogram (another tree) between counters of the same prefix, all get
// their own full names.
func TestScopePrefixRemembered(t *testing.T) {
	s := NewStore()
	a, b := s.Scope("cluster.a."), s.Scope("cluster.a.b.")
	a.Counter("x")
	h := a.Histogram("h", UnitMilliseconds)
	a.Counter("y")
	b.Counter("x")
	a.Gauge("g")
	s.Scope("cluster.").Counter("z")
	a.Counter("w")
	want := []string{"cluster.a.b.x", "cluster.a.w", "cluster.a.x", "cluster.a.y", "cluster.z"}
	if got := s.CounterNames(); !slices.Equal(got, want) {
		t.Errorf("counters %q, want %q", got, want)
	}
	if got := s.GaugeNames(); !slices.Equal(got, []string{"cluster.a.g"}) {
		t.Errorf("gauges %q", got)
	}
	if s.Histogram("cluster.a.h") != h {
		t.Error("the histogram is not found by its full name")
	}
	if s.Counter("cluster.a.x") != a.Counter("x") {
		t.Error("a counter is not found by its full name")
	}
}

// TestListedStatsFoundAfterRestart checks the stats the young map hands to
// their nodes' sorted lists: they stay out of the store-wide index, are found again as the same stats (a counter and a gauge
// sharing a name, and a prefix sharing it too), a stat added later to such
// a node is made once, and the listing is in order.
func TestListedStatsFoundAfterRestart(t *testing.T) {
	s := NewStore()
	const scopes, each = 100, 30 // 3,000 children and more: several restarts
	type pair struct {
		c *Counter
		g *Gauge
	}
	got := map[string]pair{}
	var subs []*Counter
	for i := range scopes {
		sc := s.Scope("cluster.c" + strconv.Itoa(i) + ".")
		for j := range each {
			name := "stat_" + strconv.Itoa(j)
			got[sc.Prefix()+name] = pair{sc.Counter(name), sc.Gauge(name)}
		}
		// A prefix of the same name as a stat.
		subs = append(subs, sc.Counter("stat_0.sub"))
	}
	s.mu.Lock()
	listed, indexed := 0, s.index.n
	for i := range s.nodes.len() {
		if s.nodes.at(i).listed {
			listed++
		}
	}
	s.mu.Unlock()
	if listed == 0 {
		t.Fatal("no node's stats were listed")
	}
	// Only prefix nodes reached the index: cluster., each scope's node
	// and its stat_0.
	if want := 1 + 2*scopes; indexed != want {
		t.Fatalf("%d entries in the index, want the %d prefix nodes", indexed, want)
	}
	for name, p := range got {
		if c := s.Counter(name); c != p.c {
			t.Fatalf("%s: a second lookup gave another counter", name)
		}
		if g := s.Gauge(name); g != p.g {
			t.Fatalf("%s: a second lookup gave another gauge", name)
		}
	}
	for i := range scopes {
		name := "cluster.c" + strconv.Itoa(i) + ".stat_0.sub"
		if s.Counter(name) != subs[i] {
			t.Fatalf("%s: a second lookup gave another counter", name)
		}
	}
	a := s.Counter("cluster.c0.late")
	if b := s.Counter("cluster.c0.late"); a != b {
		t.Fatal("cluster.c0.late: created twice")
	}
	names := s.CounterNames()
	if want := scopes*each + scopes + 1; len(names) != want {
		t.Fatalf("%d counters listed, want %d", len(names), want)
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatal("counters out of order or repeated")
	}
	if n := len(s.GaugeNames()); n != scopes*each {
		t.Fatalf("%d gauges listed, want %d", n, scopes*each)
	}
}

// TestSortMemoKeepsWalkOrder makes many scopes whose children are made in
// the same order, so that their runs take a remembered permutation, with
// names whose walk order is not their segments' byte order ("a-b" before
// "a.b", a prefix after a stat of its name, a counter and a gauge of one
// name), and checks the listing against the sorted full names.
func TestSortMemoKeepsWalkOrder(t *testing.T) {
	s := NewStore()
	names := []string{"z", "a.b", "x", "a-b", "a", "a_b", "m.n.o", "b", "ab", "a.a", "y", "c"}
	var want []string
	for i := range 300 {
		sc := s.Scope("cluster.c" + strconv.Itoa(i) + ".")
		for _, n := range names {
			sc.Counter(n)
			want = append(want, "counter "+sc.Prefix()+n)
		}
		sc.Gauge("x")
		want = append(want, "gauge "+sc.Prefix()+"x")
	}
	s.mu.Lock()
	remembered := len(s.memo.runs)
	s.mu.Unlock()
	if remembered == 0 {
		t.Fatal("no run was remembered")
	}
	slices.SortFunc(want, func(a, b string) int {
		_, na, _ := strings.Cut(a, " ")
		_, nb, _ := strings.Cut(b, " ")
		if c := strings.Compare(na, nb); c != 0 {
			return c
		}
		return strings.Compare(a, b) // counter before gauge
	})
	var got []string
	_ = s.Visit(VisitOptions{}, func(st *Stat) error {
		got = append(got, st.Kind.String()+" "+string(st.Name))
		return nil
	})
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("stat %d is %q, want %q (%d and %d stats)", i, got[i], want[i], len(got), len(want))
			}
		}
		t.Fatalf("%d stats, want %d", len(got), len(want))
	}
}

// TestLongRunsKeepWalkOrder makes more scopes under one parent than a
// remembered run holds, with names whose walk order is not their creation
// order nor their segments' byte order, under three tree roots: the
// parent's long runs are the same under the counters' and the text
// readouts' roots (one sort, reused) and another under the histograms'
// (only every third scope has one). Every kind lists in name order, and
// nothing of the long run is kept after the merge.
func TestLongRunsKeepWalkOrder(t *testing.T) {
	s := NewStore()
	n := memoMaxRun + 500
	want := map[Kind][]string{}
	for i := range n {
		name := strconv.Itoa((i * 7919) % n)
		switch i % 4 {
		case 1:
			name += "-x"
		case 2:
			name += ".x"
		}
		sc := s.Scope("cluster." + name + ".")
		sc.Counter("rq")
		want[KindCounter] = append(want[KindCounter], sc.Prefix()+"rq")
		sc.TextReadout("version_text")
		want[KindTextReadout] = append(want[KindTextReadout], sc.Prefix()+"version_text")
		if i%3 == 0 {
			sc.Histogram("time", UnitMilliseconds)
			want[KindHistogram] = append(want[KindHistogram], sc.Prefix()+"time")
		}
	}
	got := map[Kind][]string{}
	if err := s.Visit(VisitOptions{}, func(st *Stat) error {
		got[st.Kind] = append(got[st.Kind], string(st.Name))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for k, names := range want {
		slices.Sort(names)
		if !slices.Equal(got[k], names) {
			t.Errorf("%s: %d listed, want %d, or out of order", k, len(got[k]), len(names))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memo.long.segs != nil || s.memo.long.perm != nil {
		t.Error("the long run was kept after the merge")
	}
}

// TestPrefixesSharingSegments makes stats under prefixes that share
// whole segments, parts of segments or nothing with the prefix before
// them (the resolved prefix's node is climbed from the last one's), as
// scopes' stats and as names with dots: each stat is listed under its own
// name, and found again by it.
func TestPrefixesSharingSegments(t *testing.T) {
	s := NewStore()
	prefixes := []string{
		"a.b.c.", "a.b.", "a.b.d.", "a.bc.", "a.b.c.d.", "a.", "ab.", "a.b.c.", "b.", "a.b-c.", "a.b.c.d.e.", "a.x.y.",
	}
	var want []string
	made := map[string]*Counter{}
	for i, p := range prefixes {
		for _, name := range []string{"n", "m.k"} {
			full := p + name
			c := s.Scope(p).Counter(name)
			if old, ok := made[full]; ok && old != c {
				t.Fatalf("prefix %d: %s made twice", i, full)
			}
			if _, ok := made[full]; !ok {
				want = append(want, full)
			}
			made[full] = c
		}
		s.Scope(p).Histogram("h", UnitMilliseconds)
	}
	slices.Sort(want)
	if got := s.CounterNames(); !slices.Equal(got, want) {
		t.Fatalf("counters %q, want %q", got, want)
	}
	for full, c := range made {
		if got := s.Counter(full); got != c {
			t.Errorf("%s finds another counter", full)
		}
	}
}
