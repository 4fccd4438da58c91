package stats

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/google/go-cmp/cmp"
)

func TestStoreReturnsOneStatPerName(t *testing.T) {
	s := NewStore()
	server := s.Scope("server.")
	server.Counter("static_unknown_fields").Add(2)
	s.Counter("server.static_unknown_fields").Inc()
	if got := server.Counter("static_unknown_fields").Value(); got != 3 {
		t.Errorf("counter = %d, want 3", got)
	}
	server.Gauge("live").Set(1)
	server.Gauge("live").Add(-1)
	if got := s.Gauge("server.live").Value(); got != 0 {
		t.Errorf("gauge = %d, want 0", got)
	}
	if diff := cmp.Diff([]string{"server.static_unknown_fields"}, s.CounterNames()); diff != "" {
		t.Errorf("counter names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"server.live"}, s.GaugeNames()); diff != "" {
		t.Errorf("gauge names (-want +got):\n%s", diff)
	}
}

func TestUsed(t *testing.T) {
	s := NewStore()
	c, g := s.Counter("c"), s.Gauge("g")
	if c.Used() || g.Used() {
		t.Fatal("fresh stats report used")
	}
	c.Add(0)
	g.Set(0)
	if !c.Used() || !g.Used() {
		t.Fatal("written stats do not report used")
	}
}

func TestConcurrentIncrements(t *testing.T) {
	s := NewStore()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := s.Counter("hot")
			for range 1000 {
				c.Inc()
			}
		})
	}
	wg.Wait()
	if got := s.Counter("hot").Value(); got != 8000 {
		t.Errorf("counter = %d, want 8000", got)
	}
}

func TestVisitOrderIsByteOrder(t *testing.T) {
	names := []string{
		"a", "a.b", "a-b", "a_b", "a.b.c", "a.", "a..b", "", ".x", "ab", "a b",
		"cluster.my.x", "cluster.my-svc.x", "cluster.my_svc.x", "cluster.my",
	}
	s := NewStore()
	for _, n := range names {
		s.Counter(n)
	}
	s.Gauge("a.b") // same name, other kind: both listed
	want := append(append([]string(nil), names...), "a.b")
	slices.Sort(want)
	var got []string
	if err := s.Visit(VisitOptions{}, func(st *Stat) error {
		got = append(got, string(st.Name))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("visit order (-want +got):\n%s", diff)
	}
}

func TestVisitSeesStatsAddedBetweenVisits(t *testing.T) {
	s := NewStore()
	for i := range 100 {
		s.Counter("c." + itoa(i*2))
	}
	if n := len(s.CounterNames()); n != 100 {
		t.Fatalf("first visit: %d names, want 100", n)
	}
	for i := range 100 {
		s.Counter("c." + itoa(i*2+1))
	}
	got := s.CounterNames()
	if len(got) != 200 || !slices.IsSorted(got) {
		t.Errorf("second visit: %d names, sorted=%v", len(got), slices.IsSorted(got))
	}
}

func TestResetCountersKeepsSinkDeltas(t *testing.T) {
	s := NewStore()
	c := s.Counter("c")
	sink := &recordingSink{}
	f := NewFlusher(s, []Sink{sink}, FlusherOptions{})
	steps := []struct {
		name      string
		add       uint64
		reset     bool
		wantLocal uint64
		wantDelta uint64
	}{
		{"first", 5, false, 5, 5},
		{"reset after adding", 3, true, 0, 3},
		{"after reset", 2, false, 2, 2},
		{"reset only", 0, true, 0, 0},
	}
	for _, st := range steps {
		c.Add(st.add)
		if st.reset {
			s.ResetCounters()
		}
		if got := c.Value(); got != st.wantLocal {
			t.Errorf("%s: local value %d, want %d", st.name, got, st.wantLocal)
		}
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := sink.counters["c"]; got != st.wantDelta {
			t.Errorf("%s: sink delta %d, want %d", st.name, got, st.wantDelta)
		}
	}
}

func TestScopes(t *testing.T) {
	s := NewStore()
	cl := s.Scope("cluster.").Scope("c1.")
	cl.Counter("upstream_rq_total").Inc()
	cl.Gauge("upstream_cx_active").Set(2)
	cl.TextReadout("name").Set("c1")
	cl.Histogram("upstream_rq_time", UnitMilliseconds).Record(3)
	if cl.Prefix() != "cluster.c1." {
		t.Errorf("prefix %q", cl.Prefix())
	}
	cases := map[string]struct {
		got, want any
	}{
		"counter":      {s.Counter("cluster.c1.upstream_rq_total").Value(), uint64(1)},
		"gauge":        {s.Gauge("cluster.c1.upstream_cx_active").Value(), int64(2)},
		"text readout": {s.TextReadout("cluster.c1.name").Value(), "c1"},
		"histogram":    {s.Histogram("cluster.c1.upstream_rq_time").Unit(), UnitMilliseconds},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", name, tc.got, tc.want)
		}
	}
}

func TestStatsMatcher(t *testing.T) {
	prefix := func(p string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: p}}
	}
	cases := map[string]struct {
		matcher *metricsv3.StatsMatcher
		listed  []string
	}{
		"none":       {nil, []string{"cluster.a.x", "server.live"}},
		"reject all": {&metricsv3.StatsMatcher{StatsMatcher: &metricsv3.StatsMatcher_RejectAll{RejectAll: true}}, nil},
		"inclusion": {&metricsv3.StatsMatcher{StatsMatcher: &metricsv3.StatsMatcher_InclusionList{
			InclusionList: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{prefix("server.")}}}},
			[]string{"server.live"}},
		"exclusion": {&metricsv3.StatsMatcher{StatsMatcher: &metricsv3.StatsMatcher_ExclusionList{
			ExclusionList: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{prefix("server.")}}}},
			[]string{"cluster.a.x"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewStoreWithConfig(&metricsv3.StatsConfig{StatsMatcher: tc.matcher})
			if err != nil {
				t.Fatal(err)
			}
			c := s.Counter("cluster.a.x")
			c.Add(4)
			s.Gauge("server.live").Set(1)
			if s.Counter("cluster.a.x") != c || c.Value() != 4 {
				t.Errorf("a rejected or accepted counter must keep working: value %d", c.Value())
			}
			var got []string
			_ = s.Visit(VisitOptions{}, func(st *Stat) error {
				got = append(got, string(st.Name))
				return nil
			})
			if diff := cmp.Diff(tc.listed, got); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecentLookups(t *testing.T) {
	s := NewStore()
	s.Counter("before")
	if names, total, enabled := s.RecentLookups(); len(names) != 0 || total != 1 || enabled {
		t.Fatalf("disabled: names %v total %d enabled %v", names, total, enabled)
	}
	s.SetRecentLookupsCapacity(RecentLookupsCapacity)
	for i, n := range []string{"alpha", "beta", "gamma"} {
		for range 3 - i {
			s.Gauge(n)
		}
	}
	names, total, _ := s.RecentLookups()
	want := []Lookup{{"gamma", 1}, {"beta", 2}, {"alpha", 3}}
	if diff := cmp.Diff(want, names); diff != "" || total != 7 {
		t.Errorf("enabled: total %d, names (-want +got):\n%s", total, diff)
	}
	s.SetRecentLookupsCapacity(0)
	if names, total, _ := s.RecentLookups(); len(names) != 0 || total != 7 {
		t.Errorf("disable must forget names and keep the total: %v %d", names, total)
	}
	s.ClearRecentLookups()
	if _, total, _ := s.RecentLookups(); total != 0 {
		t.Errorf("clear must zero the total: %d", total)
	}
}

func TestBadConfigIsAnError(t *testing.T) {
	cases := map[string]*metricsv3.StatsConfig{
		"tag regex":               {StatsTags: []*metricsv3.TagSpecifier{{TagName: "x", TagValue: &metricsv3.TagSpecifier_Regex{Regex: "("}}}},
		"tag regex without group": {StatsTags: []*metricsv3.TagSpecifier{{TagName: "x", TagValue: &metricsv3.TagSpecifier_Regex{Regex: "abc"}}}},
		"unknown default tag":     {StatsTags: []*metricsv3.TagSpecifier{{TagName: "proxy.nope"}}},
		"empty tag name":          {StatsTags: []*metricsv3.TagSpecifier{{TagValue: &metricsv3.TagSpecifier_FixedValue{FixedValue: "v"}}}},
		"matcher regex": {StatsMatcher: &metricsv3.StatsMatcher{StatsMatcher: &metricsv3.StatsMatcher_InclusionList{
			InclusionList: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "("}}}}}}}},
		"no buckets":           {HistogramBucketSettings: []*metricsv3.HistogramBucketSettings{{Match: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "h"}}}}},
		"negative bucket":      {HistogramBucketSettings: []*metricsv3.HistogramBucketSettings{{Match: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "h"}}, Buckets: []float64{-1}}}},
		"duplicate bucket":     {HistogramBucketSettings: []*metricsv3.HistogramBucketSettings{{Match: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "h"}}, Buckets: []float64{1, 1}}}},
		"bucket matcher unset": {HistogramBucketSettings: []*metricsv3.HistogramBucketSettings{{Buckets: []float64{1}}}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := NewStoreWithConfig(cfg); err == nil {
				t.Error("no error")
			}
		})
	}
}

// recordingSink keeps the last flush's counter deltas and gauges by name.
type recordingSink struct {
	counters map[string]uint64
	gauges   map[string]int64
	hists    []string
}

func (r *recordingSink) Flush(sn *Snapshot) error {
	r.counters, r.gauges, r.hists = map[string]uint64{}, map[string]int64{}, nil
	sn.Counters(func(name []byte, delta, _ uint64) { r.counters[string(name)] = delta })
	sn.Gauges(func(name []byte, v int64) { r.gauges[string(name)] = v })
	sn.Histograms(func(name []byte, _ *Histogram) { r.hists = append(r.hists, string(name)) })
	return nil
}

// TestConcurrentCreateAndRender renders while other goroutines create and
// update stats: run with -race to check the lock-free walk.
func TestConcurrentCreateAndRender(t *testing.T) {
	s := NewStore()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				s.Counter("c." + itoa(g) + "." + itoa(i)).Inc()
				s.Histogram("h." + itoa(g)).Record(uint64(i))
				s.Gauge("g." + itoa(i)).Set(int64(i))
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			s.MergeHistograms()
		}
	})
	for range 20 {
		var b bytes.Buffer
		if err := RenderJSON(&b, s, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b.Bytes()) {
			t.Fatal("invalid JSON while stats were being created")
		}
		b.Reset()
		if err := RenderPrometheus(&b, s, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := checkExposition(b.String()); err != nil {
			t.Fatalf("invalid exposition while stats were being created: %v", err)
		}
		if err := RenderText(&b, s, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if n := len(s.CounterNames()); n != 2000 {
		t.Errorf("%d counters, want 2000", n)
	}
}

// TestScopeNamesAreFullNames checks that a scope's stat is the stat of its
// full name in every place a name matters, though a scope finds its stats
// without building their names: the stats matcher, histogram bucket
// rules, recent lookups, and a prefix that does not end with a dot.
func TestScopeNamesAreFullNames(t *testing.T) {
	prefix := func(p string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: p}}
	}
	s, err := NewStoreWithConfig(&metricsv3.StatsConfig{
		StatsMatcher: &metricsv3.StatsMatcher{StatsMatcher: &metricsv3.StatsMatcher_ExclusionList{
			ExclusionList: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{prefix("cluster.hidden.")}}}},
		HistogramBucketSettings: []*metricsv3.HistogramBucketSettings{{
			Match: prefix("cluster.custom.rq_"), Buckets: []float64{1, 2},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.SetRecentLookupsCapacity(RecentLookupsCapacity)
	shown := s.Scope("cluster.").Scope("shown.")
	hidden := s.Scope("cluster.").Scope("hidden.")
	custom := s.Scope("cluster.custom.")
	undotted := s.Scope("cluster.sh").Scope("own")

	shown.Counter("x").Inc()
	hidden.Counter("x").Inc()
	hidden.Gauge("g").Set(1)
	if undotted.Counter(".x") != s.Counter("cluster.shown.x") || s.Counter("cluster.shown.x").Value() != 1 {
		t.Errorf("a prefix without a trailing dot must join the name")
	}
	if hidden.Counter("x") != s.Counter("cluster.hidden.x") || hidden.Counter("x").Value() != 1 {
		t.Errorf("a rejected scope counter must be the full name's and keep working")
	}
	if got := custom.Histogram("rq_time", UnitMilliseconds).Bounds(); !slices.Equal(got, []float64{1, 2}) {
		t.Errorf("bucket rule through a scope: bounds %v", got)
	}
	if got := custom.Histogram("cx_time", UnitMilliseconds).Bounds(); !slices.Equal(got, DefaultBuckets()) {
		t.Errorf("no bucket rule through a scope: bounds %v", got)
	}
	var listed []string
	_ = s.Visit(VisitOptions{}, func(st *Stat) error {
		listed = append(listed, string(st.Name))
		return nil
	})
	wantListed := []string{"cluster.shown.x", "cluster.custom.cx_time", "cluster.custom.rq_time"}
	if diff := cmp.Diff(wantListed, listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	names, _, _ := s.RecentLookups()
	counts := map[string]uint64{}
	for _, l := range names {
		counts[l.Name] = l.Count
	}
	want := map[string]uint64{
		"cluster.shown.x": 4, "cluster.hidden.x": 4, "cluster.hidden.g": 1,
		"cluster.custom.rq_time": 1, "cluster.custom.cx_time": 1,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("recent lookups (-want +got):\n%s", diff)
	}
}
