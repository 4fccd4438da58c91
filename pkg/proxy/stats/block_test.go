package stats

import (
	"fmt"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// blockTestTemplate has every kind, names that sort around a prefix of
// the same segment ("x" and "x.y", "a-b" and "a.b") and a counter and a
// gauge of one name.
var blockTestTemplate = NewTemplate(
	CounterStat("rq_total"),
	GaugeStat("cx_active"),
	HistogramStat("rq_time", UnitMilliseconds),
	DeclaredCounterStat("rare"),
	CounterStat("x"),
	GaugeStat("x"),
	CounterStat("a-b"),
	DeclaredCounterStat("z_declared"),
	HistogramStat("per_cx", UnitUnspecified),
	CounterStat("already"),
	CounterStat("was_declared"),
	GaugeStat("g"),
)

// blockTestTemplate2 is a second template made under the same scopes.
var blockTestTemplate2 = NewTemplate(
	CounterStat("b_second"),
	DeclaredCounterStat("m_second"),
	GaugeStat("zz"),
	CounterStat("rq_total"), // also in the first template
)

// makeBlockTestStats makes the same stats in s with blocks (block true)
// or name by name, with stats that exist before, stats made between the
// blocks, and a few used. It returns the stats the blocks returned.
func makeBlockTestStats(s *Store, block bool, scopes int) []any {
	var got []any
	for i := range scopes {
		sc := s.Scope(fmt.Sprintf("cluster.c%d.", i))
		if i%3 == 1 {
			// Stats that exist before the block: one of its counters, one
			// as a declared counter, a prefix of one of its names and a
			// stat under it.
			sc.Counter("already").Inc()
			sc.DeclareCounter("was_declared")
			sc.Gauge("x.y").Set(3)
			sc.Gauge("a.b")
		}
		if i%5 == 2 {
			// A young node: its stats were just made one by one.
			sc.Counter("young").Inc()
		}
		for _, t := range []*Template{blockTestTemplate, blockTestTemplate2} {
			if block {
				b := sc.NewBlock(t)
				for p, st := range t.stats {
					switch st.kind {
					case KindCounter:
						got = append(got, b.Counter(p))
					case KindGauge:
						got = append(got, b.Gauge(p))
					case KindHistogram:
						got = append(got, b.Histogram(p))
					}
				}
				continue
			}
			for _, st := range t.stats {
				switch st.kind {
				case KindCounter:
					got = append(got, sc.Counter(st.name))
				case KindGauge:
					got = append(got, sc.Gauge(st.name))
				case KindHistogram:
					got = append(got, sc.Histogram(st.name, st.unit))
				case kindLazyCounter:
					sc.DeclareCounter(st.name)
				}
			}
		}
		sc.Counter("after").Inc()
		if i%2 == 0 {
			sc.Counter("rq_total").Add(uint64(i + 1))
			sc.Histogram("rq_time", UnitMilliseconds).Record(uint64(i))
			sc.Gauge("x").Set(int64(i))
		}
		if i%4 == 0 {
			sc.Counter("rare").Inc()
		}
	}
	return got
}

// TestBlockMatchesNameByName makes the same stats with blocks and name by
// name, in stores with and without a stats matcher, and with a render
// between scopes (so that blocks meet listed nodes): every rendering is
// the same, and the blocks' stats are those the names find.
func TestBlockMatchesNameByName(t *testing.T) {
	exclude := &metricsv3.StatsConfig{StatsMatcher: &metricsv3.StatsMatcher{
		StatsMatcher: &metricsv3.StatsMatcher_ExclusionList{ExclusionList: &matcherv3.ListStringMatcher{
			Patterns: []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: ".x"}}},
		}},
	}}
	for name, cfg := range map[string]*metricsv3.StatsConfig{"defaults": nil, "exclusion list": exclude} {
		t.Run(name, func(t *testing.T) {
			stores := [2]*Store{}
			var got [2][]any
			for i, block := range []bool{false, true} {
				s, err := NewStoreWithConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				stores[i] = s
				got[i] = makeBlockTestStats(s, block, 40)
			}
			sameRenders(t, "made", stores[0], stores[1])
			if len(got[0]) != len(got[1]) {
				t.Fatalf("%d stats name by name, %d from blocks", len(got[0]), len(got[1]))
			}
			// Made again, by name, in both stores: the block store finds
			// the stats its blocks returned.
			makeBlockTestStats(stores[0], false, 40)
			again := makeBlockTestStats(stores[1], false, 40)
			for i := range again {
				if again[i] != got[1][i] {
					t.Fatalf("stat %d: the block returned %p, its name finds %p", i, got[1][i], again[i])
				}
			}
			sameRenders(t, "looked up again", stores[0], stores[1])
		})
	}
}

// TestBlockAfterRender makes blocks under scopes whose nodes were listed
// by a render, and again once they exist: the renderings match name by
// name, and the recent-lookups totals count every name.
func TestBlockAfterRender(t *testing.T) {
	var stores [2]*Store
	var totals [2]uint64
	for i, block := range []bool{false, true} {
		s := NewStore()
		makeBlockTestStats(s, block, 7)
		_ = renderAll(t, s)
		makeBlockTestStats(s, block, 12)
		s.SetRecentLookupsCapacity(RecentLookupsCapacity)
		makeBlockTestStats(s, block, 2)
		s.SetRecentLookupsCapacity(0)
		stores[i] = s
		names, total, _ := s.RecentLookups()
		totals[i] = total
		if len(names) != 0 {
			t.Errorf("tracked names left after disabling: %v", names)
		}
	}
	sameRenders(t, "made after renders", stores[0], stores[1])
	if totals[0] != totals[1] {
		t.Errorf("recent lookups total %d name by name, %d with blocks", totals[0], totals[1])
	}
}

// TestNewTemplateRefusesBadNames: a dotted, empty or repeated name is a
// programming error.
func TestNewTemplateRefusesBadNames(t *testing.T) {
	for name, stats := range map[string][]TemplateStat{
		"dotted":                 {CounterStat("a.b")},
		"empty":                  {GaugeStat("")},
		"repeated":               {CounterStat("a"), CounterStat("a")},
		"declared and a counter": {CounterStat("a"), DeclaredCounterStat("a")},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("NewTemplate did not panic")
				}
			}()
			NewTemplate(stats...)
		})
	}
	// A counter and a gauge may share a name, as in the store.
	NewTemplate(CounterStat("a"), GaugeStat("a"))
}
