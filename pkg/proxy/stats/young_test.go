package stats

import (
	"slices"
	"strconv"
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
	if s.young.from == 0 {
		t.Fatalf("the map never restarted (%d children)", len(s.young.children))
	}
	if !s.young.covers(s.nodes.len() - 1) {
		t.Fatalf("the newest node %d is not covered (from %d)", s.nodes.len()-1, s.young.from)
	}
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
