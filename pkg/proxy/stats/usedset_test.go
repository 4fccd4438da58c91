package stats

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	"github.com/google/go-cmp/cmp"
)

// visitNames returns the "kind name" of every stat Visit meets.
func visitNames(t *testing.T, s *Store, o VisitOptions) []string {
	t.Helper()
	var out []string
	if err := s.Visit(o, func(st *Stat) error {
		out = append(out, st.Kind.String()+" "+string(st.Name))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// usedByScan is what usedonly must show: every stat of a full walk whose
// Used reports true.
func usedByScan(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	if err := s.Visit(VisitOptions{}, func(st *Stat) error {
		var used bool
		switch st.Kind {
		case KindCounter:
			used = st.Counter.Used()
		case KindGauge:
			used = st.Gauge.Used()
		case KindTextReadout:
			used = st.TextReadout.Used()
		case KindHistogram:
			used = st.Histogram.Used()
		}
		if used {
			out = append(out, st.Kind.String()+" "+string(st.Name))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUsedOnlyWalksTheUsedIndex checks that the used lists, which usedonly
// walks instead of testing every stat, list exactly the used stats in
// order, however creation, first use and renders interleave.
func TestUsedOnlyWalksTheUsedIndex(t *testing.T) {
	type step struct {
		create []string // "c name", "g name", "t name", "h name"
		use    []string
		render bool
	}
	cases := map[string][]step{
		"used before the first render": {
			{create: []string{"c a.b.c", "c a.b.d", "g a.b", "c a.x"}, use: []string{"c a.b.d", "g a.b"}, render: true},
		},
		"used after a render": {
			{create: []string{"c a.b.c", "c a.b.d", "c z"}, render: true},
			{use: []string{"c z", "c a.b.c"}, render: true},
		},
		"more used under a prefix already listed": {
			{create: []string{"c p.q.r1", "c p.q.r2", "c p.q.r3", "c p.s"}, use: []string{"c p.q.r2"}, render: true},
			{use: []string{"c p.q.r3", "c p.q.r1"}, render: true},
			{use: []string{"c p.s"}, render: true},
		},
		"created and used between renders": {
			{create: []string{"c m.a"}, use: []string{"c m.a"}, render: true},
			{create: []string{"c m.b", "c m-x.a", "c m.", "c m"}, use: []string{"c m-x.a", "c m", "c m."}, render: true},
		},
		"counter and gauge of one name": {
			{create: []string{"c same.n", "g same.n"}, use: []string{"g same.n"}, render: true},
			{use: []string{"c same.n"}, render: true},
		},
		"every kind": {
			{create: []string{"t v.text", "h v.hist", "g v.g", "c v.c", "t v.unset", "h v.unrecorded"}, use: []string{"t v.text", "h v.hist", "g v.g", "c v.c"}, render: true},
		},
		"nothing used": {
			{create: []string{"c a", "g b.c"}, render: true},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore()
			use := func(spec string) {
				kind, n, _ := strings.Cut(spec, " ")
				switch kind {
				case "c":
					s.Counter(n).Inc()
				case "g":
					s.Gauge(n).Set(0)
				case "t":
					s.TextReadout(n).Set("x")
				case "h":
					s.Histogram(n).Record(1)
				}
			}
			for i, st := range steps {
				for _, spec := range st.create {
					kind, n, _ := strings.Cut(spec, " ")
					switch kind {
					case "c":
						s.Counter(n)
					case "g":
						s.Gauge(n)
					case "t":
						s.TextReadout(n)
					case "h":
						s.Histogram(n)
					}
				}
				for _, spec := range st.use {
					use(spec)
				}
				if !st.render {
					continue
				}
				want := usedByScan(t, s)
				got := visitNames(t, s, VisitOptions{UsedOnly: true})
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("step %d: usedonly walk (-scan +index):\n%s", i, diff)
				}
			}
		})
	}
}

// TestUsedSurvivesReset: /reset_counters zeroes counters, but a counter
// once written stays used, and the next increment after a reset (which
// finds the value at zero again) keeps it listed once.
func TestUsedSurvivesReset(t *testing.T) {
	s := NewStore()
	c := s.Counter("c.reset")
	s.Counter("c.never")
	c.Add(4)
	s.ResetCounters()
	if !c.Used() || c.Value() != 0 {
		t.Fatalf("after reset: used=%v value=%d, want used, 0", c.Used(), c.Value())
	}
	var b bytes.Buffer
	if err := RenderText(&b, s, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "c.reset: 0\n"; got != want {
		t.Errorf("usedonly after reset = %q, want %q", got, want)
	}
	c.Inc()
	b.Reset()
	if err := RenderText(&b, s, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "c.reset: 1\n"; got != want {
		t.Errorf("usedonly after reset and increment = %q, want %q", got, want)
	}
}

// TestUsedWrites lists which writes mark each kind used.
func TestUsedWrites(t *testing.T) {
	cases := map[string]struct {
		write func(s *Store) interface{ Used() bool }
		want  bool
	}{
		"counter Inc":          {func(s *Store) interface{ Used() bool } { c := s.Counter("x"); c.Inc(); return c }, true},
		"counter Add(0)":       {func(s *Store) interface{ Used() bool } { c := s.Counter("x"); c.Add(0); return c }, true},
		"counter looked up":    {func(s *Store) interface{ Used() bool } { return s.Counter("x") }, false},
		"gauge Set(0)":         {func(s *Store) interface{ Used() bool } { g := s.Gauge("x"); g.Set(0); return g }, true},
		"gauge Inc":            {func(s *Store) interface{ Used() bool } { g := s.Gauge("x"); g.Inc(); return g }, true},
		"gauge Dec":            {func(s *Store) interface{ Used() bool } { g := s.Gauge("x"); g.Dec(); return g }, true},
		"gauge Add":            {func(s *Store) interface{ Used() bool } { g := s.Gauge("x"); g.Add(-3); return g }, true},
		"gauge looked up":      {func(s *Store) interface{ Used() bool } { return s.Gauge("x") }, false},
		"text readout Set":     {func(s *Store) interface{ Used() bool } { r := s.TextReadout("x"); r.Set(""); return r }, true},
		"text readout unset":   {func(s *Store) interface{ Used() bool } { return s.TextReadout("x") }, false},
		"histogram Record":     {func(s *Store) interface{ Used() bool } { h := s.Histogram("x"); h.Record(0); return h }, true},
		"histogram unrecorded": {func(s *Store) interface{ Used() bool } { return s.Histogram("x") }, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.write(NewStore()).Used(); got != tc.want {
				t.Errorf("Used() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRejectedStatsMarkUsed: stats outside the tree (rejected by the
// stats matcher) still report use, and never appear in usedonly output.
func TestRejectedStatsMarkUsed(t *testing.T) {
	s, err := NewStoreWithConfig(&metricsv3.StatsConfig{
		StatsMatcher: &metricsv3.StatsMatcher{StatsMatcher: &metricsv3.StatsMatcher_RejectAll{RejectAll: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, g, h, r := s.Counter("c"), s.Gauge("g"), s.Histogram("h"), s.TextReadout("t")
	c.Inc()
	g.Set(1)
	h.Record(1)
	r.Set("v")
	if !c.Used() || !g.Used() || !h.Used() || !r.Used() {
		t.Errorf("rejected stats used: counter %v gauge %v histogram %v readout %v", c.Used(), g.Used(), h.Used(), r.Used())
	}
	if got := visitNames(t, s, VisitOptions{UsedOnly: true}); len(got) != 0 {
		t.Errorf("usedonly lists rejected stats: %v", got)
	}
}

// TestConcurrentFirstUse marks stats used from several goroutines while
// usedonly renders run: each used stat must end up listed exactly once.
// Run with -race to check the used lists' locking.
func TestConcurrentFirstUse(t *testing.T) {
	s := NewStore()
	const perGoroutine = 300
	names := func(g int) []string {
		out := make([]string, perGoroutine)
		for i := range out {
			// Goroutines share prefixes, so they race to list them.
			out[i] = fmt.Sprintf("shared.p%d.g%d_%d", i%7, g, i)
		}
		return out
	}
	for g := range 4 {
		for _, n := range names(g) {
			s.Counter(n)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for _, n := range names(g) {
				c := s.Counter(n)
				c.Inc()
				c.Inc()
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if err := RenderText(&bytes.Buffer{}, s, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	got := visitNames(t, s, VisitOptions{UsedOnly: true})
	if len(got) != 4*perGoroutine {
		t.Errorf("usedonly lists %d stats, want %d", len(got), 4*perGoroutine)
	}
	if diff := cmp.Diff(usedByScan(t, s), got); diff != "" {
		t.Errorf("usedonly walk (-scan +index):\n%s", diff)
	}
}

// TestUsedListsBothWays checks the used lists when mergeUsed takes a
// node's queued children both ways (see usedScanRatio): a scope with one
// or two of its many stats first used (each searched for), one with many
// (its list read once), after the scope's stats were made one by one or
// as a block, over several renders with more first uses between them.
func TestUsedListsBothWays(t *testing.T) {
	names := make([]TemplateStat, 0, 120)
	for i := range 40 {
		names = append(names, CounterStat(fmt.Sprintf("c%02d", i)), GaugeStat(fmt.Sprintf("g%02d", i)), HistogramStat(fmt.Sprintf("h%02d", i), UnitMilliseconds))
	}
	tmpl := NewTemplate(names...)
	s := NewStore()
	type scope struct {
		sc    Scope
		block bool
	}
	var scopes []scope
	for i := range 60 {
		sc := s.Scope(fmt.Sprintf("cluster.s%02d.", i))
		if i%2 == 0 {
			sc.NewBlock(tmpl)
		} else {
			for _, st := range names {
				switch st.kind {
				case KindCounter:
					sc.Counter(st.name)
				case KindGauge:
					sc.Gauge(st.name)
				case KindHistogram:
					sc.Histogram(st.name, UnitMilliseconds)
				}
			}
		}
		scopes = append(scopes, scope{sc, i%2 == 0})
	}
	// Each round uses, in each scope, none, one, a few or many of its
	// stats not used yet, in an order of their own.
	seed := uint32(1)
	next := func(n int) int {
		seed = seed*1664525 + 1013904223
		return int(seed>>8) % n
	}
	for round := range 5 {
		for i, sc := range scopes {
			var n int
			switch (i + round) % 4 {
			case 1:
				n = 1
			case 2:
				n = 3
			case 3:
				n = 40
			}
			for range n {
				st := names[next(len(names))]
				switch st.kind {
				case KindCounter:
					sc.sc.Counter(st.name).Inc()
				case KindGauge:
					sc.sc.Gauge(st.name).Set(1)
				case KindHistogram:
					sc.sc.Histogram(st.name, UnitMilliseconds).Record(1)
				}
			}
		}
		want := usedByScan(t, s)
		got := visitNames(t, s, VisitOptions{UsedOnly: true})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d: usedonly walk (-scan +index):\n%s", round, diff)
		}
		if round == 0 && len(want) == 0 {
			t.Fatal("nothing used")
		}
	}
}
