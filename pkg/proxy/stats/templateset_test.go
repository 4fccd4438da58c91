package stats

import (
	"fmt"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// setTestPart is a template made with blockTestTemplate in a set: no name
// of one kind in common with it, but names around its own.
var setTestPart = NewTemplate(
	CounterStat("b_second"),
	DeclaredCounterStat("m_second"),
	GaugeStat("zz"),
	HistogramStat("rq_time2", UnitMilliseconds),
	GaugeStat("rq_total"), // a counter of the first template's name
	CounterStat("x-y"),
)

var setTestSet = NewTemplateSet(blockTestTemplate, setTestPart, blockTestTemplate2Free)

// blockTestTemplate2Free is a third part of one stat.
var blockTestTemplate2Free = NewTemplate(DeclaredCounterStat("zzz_last"))

// makeSetTestStats makes the set's stats under scopes, as a set (set true)
// or template by template with NewBlock, with stats that exist before
// under some scopes, and returns the stats the blocks returned.
func makeSetTestStats(s *Store, set bool, scopes int) []any {
	var got []any
	for i := range scopes {
		sc := s.Scope(fmt.Sprintf("cluster.c%d.", i))
		if i%3 == 1 {
			sc.Counter("already").Inc()
			sc.DeclareCounter("was_declared")
			sc.Gauge("x.y").Set(3)
		}
		if i%5 == 2 {
			sc.Counter("young").Inc()
		}
		var blocks []Block
		if set {
			bs := sc.NewBlocks(setTestSet)
			for p := range setTestSet.parts {
				blocks = append(blocks, bs.Part(p))
			}
		} else {
			for _, t := range setTestSet.parts {
				blocks = append(blocks, sc.NewBlock(t))
			}
		}
		for _, b := range blocks {
			for p, st := range b.t.stats {
				switch st.kind {
				case KindCounter:
					got = append(got, b.Counter(p))
				case KindGauge:
					got = append(got, b.Gauge(p))
				case KindHistogram:
					got = append(got, b.Histogram(p))
				}
			}
		}
		sc.Counter("after").Inc()
		if i%2 == 0 {
			sc.Counter("rq_total").Add(uint64(i + 1))
			sc.Gauge("rq_total").Set(int64(i))
			sc.Histogram("rq_time2", UnitMilliseconds).Record(uint64(i))
		}
		if i%4 == 0 {
			sc.Counter("m_second").Inc()
		}
	}
	return got
}

// TestTemplateSetMatchesBlocks makes the same stats as one set and as
// one block per template, with and without a stats matcher (which makes
// them name by name): every rendering is the same, and each part's block
// returns the stats the names find.
func TestTemplateSetMatchesBlocks(t *testing.T) {
	exclude := &metricsv3.StatsConfig{StatsMatcher: &metricsv3.StatsMatcher{
		StatsMatcher: &metricsv3.StatsMatcher_ExclusionList{ExclusionList: &matcherv3.ListStringMatcher{
			Patterns: []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: ".zz"}}},
		}},
	}}
	for name, cfg := range map[string]*metricsv3.StatsConfig{"defaults": nil, "exclusion list": exclude} {
		t.Run(name, func(t *testing.T) {
			var stores [2]*Store
			var got [2][]any
			for i, set := range []bool{false, true} {
				s, err := NewStoreWithConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				stores[i] = s
				got[i] = makeSetTestStats(s, set, 30)
				if i == 1 {
					// Again after a render: the nodes are listed and the
					// stats exist.
					_ = renderAll(t, s)
				}
			}
			sameRenders(t, "made", stores[0], stores[1])
			if len(got[0]) != len(got[1]) {
				t.Fatalf("%d stats from blocks, %d from the set", len(got[0]), len(got[1]))
			}
			again := makeSetTestStats(stores[1], false, 30)
			makeSetTestStats(stores[0], true, 30)
			for i := range again {
				if again[i] != got[1][i] {
					t.Fatalf("stat %d: the set returned %p, the template's block finds %p", i, got[1][i], again[i])
				}
			}
			sameRenders(t, "made again the other way", stores[0], stores[1])
		})
	}
}

// TestTemplateSetRefusesSharedNames: two parts with a stat of one name and
// kind is a programming error.
func TestTemplateSetRefusesSharedNames(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewTemplateSet did not panic")
		}
	}()
	NewTemplateSet(blockTestTemplate, blockTestTemplate2)
}
