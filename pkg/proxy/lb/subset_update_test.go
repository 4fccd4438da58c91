package lb

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// subsetChurnConfig divides hosts by version, by version and stage, and
// into single hosts by id; the fallback is the v1 subset, then any host.
func subsetChurnConfig(t testing.TB) *SubsetConfig {
	return &SubsetConfig{
		Fallback:      FallbackDefaultSubset,
		DefaultSubset: match(t, map[string]any{"version": "v1"}).MetadataMatch.Criteria,
		PanicModeAny:  true,
		Selectors: []SubsetSelector{
			{Keys: []string{"version"}},
			{Keys: []string{"stage", "version"}},
			{Keys: []string{"id"}, SingleHostPerSubset: true},
			// The same keys again: its hits count as duplicates.
			{Keys: []string{"id"}},
		},
	}
}

// decorateSubsets gives a host random "envoy.lb" metadata: a version
// (most hosts), a stage (some), an id shared by a few hosts (some).
func decorateSubsets(t testing.TB, r *rand.Rand) func(*upstream.Host) {
	return func(h *upstream.Host) {
		md := map[string]any{}
		if r.IntN(10) > 0 {
			md["version"] = fmt.Sprintf("v%d", 1+r.IntN(4))
		}
		if r.IntN(3) > 0 {
			md["stage"] = []string{"prod", "canary"}[r.IntN(2)]
		}
		if r.IntN(2) == 0 {
			md["id"] = fmt.Sprintf("%d", r.IntN(6))
		}
		withMetadata(t, h, md)
	}
}

// sortedByAddress is a sorted copy of hosts.
func sortedByAddress(hosts []*upstream.Host) []*upstream.Host {
	return slices.SortedFunc(slices.Values(hosts), func(a, b *upstream.Host) int { return strings.Compare(a.Address, b.Address) })
}

// subsetCounters are the non-zero counters of subsets created and
// removed (the others count picks).
func subsetCounters(store *stats.Store) map[string]uint64 {
	out := counters(store)
	maps.DeleteFunc(out, func(name string, _ uint64) bool {
		return name != "lb_subsets_created" && name != "lb_subsets_removed"
	})
	return out
}

// members is the set of an entry's hosts, empty for nil.
func members(e *subsetEntry) map[*upstream.Host]bool {
	out := map[*upstream.Host]bool{}
	if e != nil {
		for _, level := range e.levels {
			for _, h := range level {
				out[h] = true
			}
		}
	}
	return out
}

// subChange is the part of ch in a subset: its added hosts now in it,
// its removed ones that were.
func subChange(ch *Change, prev, now map[*upstream.Host]bool) *Change {
	out := &Change{}
	for _, h := range ch.Added {
		if now[h] {
			out.Added = append(out.Added, h)
		}
	}
	for _, h := range ch.Removed {
		if prev[h] {
			out.Removed = append(out.Removed, h)
		}
	}
	return out
}

// TestSubsetUpdateMatchesRebuild is a differential test: on random
// sequences of host set updates, the subset balancer Update builds from
// the change equals the one built again from the whole host set
// (carrying on from the same previous one): the same subsets with the
// same hosts per level, single hosts, duplicates and stats; each subset's
// balancer, and the fallback ones, alike (compareBalancers). A subset the
// change left alone keeps its balancer, the very same.
func TestSubsetUpdateMatchesRebuild(t *testing.T) {
	for _, pol := range updatePolicies {
		t.Run(pol.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(2, uint64(len(pol.name))))
			hc := &hostChurn{r: r, weighted: pol.weights, decorate: decorateSubsets(t, r)}
			sc := subsetChurnConfig(t)
			// One random number for every draw: a subset built anew by
			// either balancer starts at the same place.
			fixed := func() uint64 { return 7 }
			incStats, incStore := newSubsetStats()
			fullStats, fullStore := newSubsetStats()
			config := func(st *Stats) Config {
				return Config{NewPicker: pol.p.Pickers(Env{Rand: fixed}), HashBased: pol.p.HashBased(), Rand: fixed, PanicThreshold: DefaultPanicThreshold, Stats: st}
			}
			levels := make([][]*upstream.Host, 3)
			for p := range levels {
				for range 10 + r.IntN(10) {
					levels[p] = append(levels[p], hc.host(p))
				}
			}
			prev := NewSubsetBalancer(levels, sc, config(nil), nil)
			kept, updated := 0, 0
			for step := range 200 {
				next, ch := hc.update(levels)
				inc := prev.Update(next, ch, sc, config(incStats))
				full := prev.Update(next, nil, sc, config(fullStats))
				if !slices.Equal(slices.Sorted(maps.Keys(inc.subsets)), slices.Sorted(maps.Keys(full.subsets))) {
					t.Fatalf("update %d: subsets %v, rebuilt %v", step, slices.Sorted(maps.Keys(inc.subsets)), slices.Sorted(maps.Keys(full.subsets)))
				}
				for key, ie := range inc.subsets {
					fe, pe := full.subsets[key], prev.subsets[key]
					sub := subChange(ch, members(pe), members(ie))
					touched := map[uint32]bool{}
					for _, h := range slices.Concat(sub.Added, sub.Removed) {
						touched[h.Priority] = true
					}
					for p := range fe.levels {
						a, b := ie.levels[p], fe.levels[p]
						if !touched[uint32(p)] {
							// The same hosts in another order keep the
							// old order, as Balancer.Update does.
							a, b = sortedByAddress(a), sortedByAddress(b)
						}
						if !slices.Equal(a, b) {
							t.Fatalf("update %d: subset %q level %d has %d hosts, rebuilt %d", step, key, p, len(ie.levels[p]), len(fe.levels[p]))
						}
					}
					if !slices.Equal(ie.hits, fe.hits) || (ie.balancer == nil) != (fe.balancer == nil) {
						t.Fatalf("update %d: subset %q: hits %v, rebuilt %v", step, key, ie.hits, fe.hits)
					}
					if ie.hits != nil {
						// The first host of its levels (the same hosts
						// as the rebuilt one's, a level left alone in
						// its old order).
						var first *upstream.Host
						for _, level := range ie.levels {
							if len(level) > 0 {
								first = level[0]
								break
							}
						}
						if ie.single != first || first == nil {
							t.Fatalf("update %d: single-host subset %q is not its first host", step, key)
						}
					}
					if ie.balancer == nil {
						continue
					}
					if pe != nil && len(sub.Added)+len(sub.Removed) == 0 {
						if ie != pe {
							t.Fatalf("update %d: subset %q: the change did not touch it, but it was built again", step, key)
						}
						kept++
						continue
					}
					was := fe.balancer
					if pe != nil {
						was = pe.balancer
					}
					updated += compareBalancers(t, step, was, ie.balancer, fe.balancer, sub)
				}
				compareBalancers(t, step, prev.any, inc.any, full.any, ch)
				for p := range full.defLevels {
					if !slices.Equal(sortedByAddress(inc.defLevels[p]), sortedByAddress(full.defLevels[p])) {
						t.Fatalf("update %d: default subset level %d differs from the rebuilt one", step, p)
					}
				}
				defPrev := map[*upstream.Host]bool{}
				defNow := map[*upstream.Host]bool{}
				for p := range full.defLevels {
					for _, h := range prev.defLevels[p] {
						defPrev[h] = true
					}
					for _, h := range inc.defLevels[p] {
						defNow[h] = true
					}
				}
				compareBalancers(t, step, prev.def, inc.def, full.def, subChange(ch, defPrev, defNow))
				if inc.fallback != inc.def || inc.panic != inc.any {
					t.Fatalf("update %d: the fallback balancers are not the new default and any subsets", step)
				}
				if !slices.Equal(inc.duplicates, full.duplicates) {
					t.Fatalf("update %d: duplicates %v, rebuilt %v", step, inc.duplicates, full.duplicates)
				}
				if ic, fc := subsetCounters(incStore), subsetCounters(fullStore); !maps.Equal(ic, fc) {
					t.Fatalf("update %d: stats %v, rebuilt %v", step, ic, fc)
				}
				if ia, fa := incStore.Gauge("lb_subsets_active").Value(), fullStore.Gauge("lb_subsets_active").Value(); ia != fa || ia != int64(len(inc.subsets)) {
					t.Fatalf("update %d: lb_subsets_active %d, rebuilt %d, subsets %d", step, ia, fa, len(inc.subsets))
				}
				// Requests move the pickers on before the next update.
				for range r.IntN(8) {
					inc.Pick(hashed(r.Uint64()))
				}
				prev, levels = inc, next
			}
			if kept == 0 || updated == 0 {
				t.Errorf("%d subsets kept, %d levels updated from the change: the comparison did not test both", kept, updated)
			}
		})
	}
}

// TestSubsetUpdateKeepsRoundRobin checks that round robin goes on from its
// place in a subset the update left alone (the same balancer) and in one
// that gained a host, as Envoy keeps a host list's index.
func TestSubsetUpdateKeepsRoundRobin(t *testing.T) {
	host := func(addr, version string) *upstream.Host {
		return withMetadata(t, &upstream.Host{Address: addr, Weight: 1}, map[string]any{"version": version})
	}
	hosts := []*upstream.Host{host("a1", "v1"), host("b1", "v2"), host("a2", "v1"), host("b2", "v2"), host("a3", "v1")}
	sc := &SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"version"}}}}
	st, store := newSubsetStats()
	s := NewSubsetBalancer([][]*upstream.Host{hosts}, sc, Config{Rand: seq(), Stats: st}, nil)
	v1, v2 := match(t, map[string]any{"version": "v1"}), match(t, map[string]any{"version": "v2"})
	picks := func(ctx *upstream.PickContext, n int) []string {
		var out []string
		for range n {
			h, _ := s.Pick(ctx)
			out = append(out, h.Address)
		}
		return out
	}
	if got := picks(v1, 2); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("v1 picks %v, want a1 a2", got)
	}
	if got := picks(v2, 1); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("v2 picks %v, want b1", got)
	}
	before := s.subsets[v1.MetadataMatch.Key()].balancer

	// b3 joins v2; v3 appears with c1.
	b3, c1 := host("b3", "v2"), host("c1", "v3")
	next := append(slices.Clone(hosts), b3, c1)
	s = s.Update([][]*upstream.Host{next}, &Change{Added: []*upstream.Host{b3, c1}}, sc, Config{Rand: seq(), Stats: st})
	if s.subsets[v1.MetadataMatch.Key()].balancer != before {
		t.Error("the v1 subset, which the update left alone, was built again")
	}
	if got := picks(v1, 2); !slices.Equal(got, []string{"a3", "a1"}) {
		t.Errorf("v1 picks %v after the update, want a3 a1: round robin went back to its start", got)
	}
	if got := picks(v2, 3); !slices.Equal(got, []string{"b2", "b3", "b1"}) {
		t.Errorf("v2 picks %v after b3 joined, want b2 b3 b1", got)
	}
	want := map[string]uint64{"lb_subsets_created": 3}
	if got := subsetCounters(store); !maps.Equal(got, want) {
		t.Errorf("stats %v, want %v", got, want)
	}

	// c1 leaves: v3 goes.
	s = s.Update([][]*upstream.Host{next[:6]}, &Change{Removed: []*upstream.Host{c1}}, sc, Config{Rand: seq(), Stats: st})
	want["lb_subsets_removed"] = 1
	if got := subsetCounters(store); !maps.Equal(got, want) || s.Subsets() != 2 || store.Gauge("lb_subsets_active").Value() != 2 {
		t.Errorf("stats %v and %d subsets (gauge %d), want %v and 2", got, s.Subsets(), store.Gauge("lb_subsets_active").Value(), want)
	}
}
