package lb

import (
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// withMetadata gives a host "envoy.lb" metadata.
func withMetadata(t testing.TB, h *upstream.Host, md map[string]any) *upstream.Host {
	t.Helper()
	s, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	h.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{upstream.LBMetadataKey: s}}
	return h
}

// match builds criteria from name/value pairs; a nil map is no criteria.
func match(t testing.TB, md map[string]any) *upstream.PickContext {
	t.Helper()
	if md == nil {
		return &upstream.PickContext{}
	}
	fields := map[string]*structpb.Value{}
	for k, v := range md {
		pv, err := structpb.NewValue(v)
		if err != nil {
			t.Fatal(err)
		}
		fields[k] = pv
	}
	return &upstream.PickContext{MetadataMatch: upstream.NewMetadataMatch(fields)}
}

// docHosts are the hosts of Envoy's subset documentation.
func docHosts(t testing.TB) []*upstream.Host {
	return []*upstream.Host{
		withMetadata(t, &upstream.Host{Address: "host1", Weight: 1}, map[string]any{"v": "1.0", "stage": "prod"}),
		withMetadata(t, &upstream.Host{Address: "host2", Weight: 1}, map[string]any{"v": "1.0", "stage": "prod"}),
		withMetadata(t, &upstream.Host{Address: "host3", Weight: 1}, map[string]any{"v": "1.1", "stage": "canary"}),
		withMetadata(t, &upstream.Host{Address: "host4", Weight: 1}, map[string]any{"v": "1.2-pre", "stage": "dev"}),
	}
}

// balancedOver picks n times and returns the hosts seen, sorted
// ("empty" when no host was found).
func balancedOver(s *SubsetBalancer, ctx *upstream.PickContext, n int) string {
	seen := map[string]bool{}
	for range n {
		h, _ := s.Pick(ctx)
		if h == nil {
			seen["empty"] = true
			continue
		}
		seen[h.Address] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func newSubsetStats() (*Stats, *stats.Store) {
	store := stats.NewStore()
	return NewStats(store.Scope(""), true), store
}

func prodDefault(t testing.TB) []upstream.MatchCriterion {
	return match(t, map[string]any{"stage": "prod"}).MetadataMatch.Criteria
}

// TestSubsetDocumentedExample is the table of Envoy's subset
// documentation. The [stage] selector comes first: a selector's fallback
// policy is kept only by the first selector to reach its keys (see
// TestSubsetSelectorFallbackOrder).
func TestSubsetDocumentedExample(t *testing.T) {
	sc := &SubsetConfig{
		Fallback:      FallbackDefaultSubset,
		DefaultSubset: prodDefault(t),
		Selectors: []SubsetSelector{
			{Keys: []string{"stage"}, Fallback: FallbackNone},
			{Keys: []string{"stage", "v"}},
		},
	}
	s := NewSubsetBalancer([][]*upstream.Host{docHosts(t)}, sc, Config{}, nil)
	tests := []struct {
		criteria map[string]any
		want     string
	}{
		{map[string]any{"stage": "canary"}, "host3"},
		{map[string]any{"v": "1.2-pre", "stage": "dev"}, "host4"},
		{map[string]any{"v": "1.0"}, "host1, host2"},
		{map[string]any{"other": "x"}, "host1, host2"},
		{nil, "host1, host2"},
		{map[string]any{"stage": "test"}, "empty"},
	}
	for _, tc := range tests {
		if got := balancedOver(s, match(t, tc.criteria), 4); got != tc.want {
			t.Errorf("criteria %v balance over %s, want %s", tc.criteria, got, tc.want)
		}
	}
}

// TestSubsetSelectorFallbackOrder pins Envoy's tree of selectors: with
// [v, stage] listed first, the node of "stage" already exists when the
// [stage] selector comes, and its NO_FALLBACK is not recorded.
func TestSubsetSelectorFallbackOrder(t *testing.T) {
	sc := &SubsetConfig{
		Fallback:      FallbackDefaultSubset,
		DefaultSubset: prodDefault(t),
		Selectors: []SubsetSelector{
			{Keys: []string{"stage", "v"}},
			{Keys: []string{"stage"}, Fallback: FallbackNone},
		},
	}
	s := NewSubsetBalancer([][]*upstream.Host{docHosts(t)}, sc, Config{}, nil)
	if got := balancedOver(s, match(t, map[string]any{"stage": "test"}), 4); got != "host1, host2" {
		t.Errorf("stage=test balances over %s, want the default subset", got)
	}
}

func TestSubsetFallbackPolicies(t *testing.T) {
	tests := map[string]struct {
		sc        SubsetConfig
		criteria  map[string]any
		want      string
		wantStats map[string]uint64
	}{
		"no fallback": {
			sc:        SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"stage"}}}},
			criteria:  map[string]any{"stage": "test"},
			want:      "empty",
			wantStats: map[string]uint64{"lb_subsets_created": 3},
		},
		"any endpoint": {
			sc:        SubsetConfig{Fallback: FallbackAnyEndpoint, Selectors: []SubsetSelector{{Keys: []string{"stage"}}}},
			criteria:  map[string]any{"stage": "test"},
			want:      "host1, host2, host3, host4",
			wantStats: map[string]uint64{"lb_subsets_created": 3, "lb_subsets_fallback": 8},
		},
		"default subset": {
			sc:        SubsetConfig{Fallback: FallbackDefaultSubset, DefaultSubset: prodDefault(t), Selectors: []SubsetSelector{{Keys: []string{"stage"}}}},
			criteria:  map[string]any{"stage": "test"},
			want:      "host1, host2",
			wantStats: map[string]uint64{"lb_subsets_created": 3, "lb_subsets_fallback": 8},
		},
		"an empty default subset is every host": {
			sc:        SubsetConfig{Fallback: FallbackDefaultSubset, Selectors: []SubsetSelector{{Keys: []string{"stage"}}}},
			want:      "host1, host2, host3, host4",
			wantStats: map[string]uint64{"lb_subsets_created": 3, "lb_subsets_fallback": 8},
		},
		"a default subset without hosts finds none": {
			sc: SubsetConfig{Fallback: FallbackDefaultSubset, DefaultSubset: match(t, map[string]any{"stage": "gone"}).MetadataMatch.Criteria,
				Selectors: []SubsetSelector{{Keys: []string{"stage"}}}},
			want:      "empty",
			wantStats: map[string]uint64{"lb_subsets_created": 3},
		},
		"panic_mode_any when the default subset is empty": {
			sc: SubsetConfig{Fallback: FallbackDefaultSubset, DefaultSubset: match(t, map[string]any{"stage": "gone"}).MetadataMatch.Criteria,
				PanicModeAny: true, Selectors: []SubsetSelector{{Keys: []string{"stage"}}}},
			want:      "host1, host2, host3, host4",
			wantStats: map[string]uint64{"lb_subsets_created": 3, "lb_subsets_fallback_panic": 8},
		},
		"panic_mode_any does nothing without a fallback": {
			sc:        SubsetConfig{PanicModeAny: true, Selectors: []SubsetSelector{{Keys: []string{"stage"}}}},
			want:      "empty",
			wantStats: map[string]uint64{"lb_subsets_created": 3},
		},
		"a selector's ANY_ENDPOINT over the cluster's NO_FALLBACK": {
			sc:        SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"stage"}, Fallback: FallbackAnyEndpoint}}},
			criteria:  map[string]any{"stage": "test"},
			want:      "host1, host2, host3, host4",
			wantStats: map[string]uint64{"lb_subsets_created": 3},
		},
		"a selector's DEFAULT_SUBSET": {
			sc:        SubsetConfig{DefaultSubset: prodDefault(t), Selectors: []SubsetSelector{{Keys: []string{"stage"}, Fallback: FallbackDefaultSubset}}},
			criteria:  map[string]any{"stage": "test"},
			want:      "host1, host2",
			wantStats: map[string]uint64{"lb_subsets_created": 3},
		},
		"a selector's fallback applies to its keys only": {
			sc:        SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"stage"}, Fallback: FallbackAnyEndpoint}}},
			criteria:  map[string]any{"v": "9"},
			want:      "empty",
			wantStats: map[string]uint64{"lb_subsets_created": 3},
		},
		"KEYS_SUBSET retries with fewer keys": {
			sc: SubsetConfig{Selectors: []SubsetSelector{
				{Keys: []string{"stage", "v"}, Fallback: FallbackKeysSubset, FallbackKeys: []string{"stage"}},
				{Keys: []string{"stage"}},
			}},
			criteria:  map[string]any{"stage": "canary", "v": "9"},
			want:      "host3",
			wantStats: map[string]uint64{"lb_subsets_created": 6, "lb_subsets_selected": 8},
		},
		"a matching subset": {
			sc:        SubsetConfig{Fallback: FallbackAnyEndpoint, Selectors: []SubsetSelector{{Keys: []string{"stage", "v"}}}},
			criteria:  map[string]any{"stage": "prod", "v": "1.0"},
			want:      "host1, host2",
			wantStats: map[string]uint64{"lb_subsets_created": 3, "lb_subsets_selected": 8},
		},
		"values compare by type": {
			sc:        SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"v"}}}},
			criteria:  map[string]any{"v": 1.0},
			want:      "empty",
			wantStats: map[string]uint64{"lb_subsets_created": 3},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st, store := newSubsetStats()
			s := NewSubsetBalancer([][]*upstream.Host{docHosts(t)}, &tc.sc, Config{Stats: st}, nil)
			if got := balancedOver(s, match(t, tc.criteria), 8); got != tc.want {
				t.Errorf("balances over %s, want %s", got, tc.want)
			}
			if diff := cmp.Diff(tc.wantStats, counters(store)); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if got, want := store.Gauge("lb_subsets_active").Value(), tc.wantStats["lb_subsets_created"]; got != int64(want) {
				t.Errorf("lb_subsets_active = %d, want %d", got, want)
			}
		})
	}
}

func TestSubsetListAsAny(t *testing.T) {
	hosts := []*upstream.Host{
		withMetadata(t, &upstream.Host{Address: "a", Weight: 1}, map[string]any{"zone": []any{"x", "y"}, "tier": "1"}),
		withMetadata(t, &upstream.Host{Address: "b", Weight: 1}, map[string]any{"zone": "y", "tier": "1"}),
	}
	tests := map[string]struct {
		listAsAny bool
		criteria  map[string]any
		want      string
	}{
		"a list element matches with list_as_any":    {listAsAny: true, criteria: map[string]any{"zone": "x", "tier": "1"}, want: "a"},
		"each element makes a subset":                {listAsAny: true, criteria: map[string]any{"zone": "y", "tier": "1"}, want: "a, b"},
		"without list_as_any the list is one value":  {criteria: map[string]any{"zone": "x", "tier": "1"}, want: "empty"},
		"without list_as_any the whole list matches": {criteria: map[string]any{"zone": []any{"x", "y"}, "tier": "1"}, want: "a"},
		"the default subset matches a list element":  {listAsAny: true, want: "a"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sc := &SubsetConfig{
				ListAsAny: tc.listAsAny, Fallback: FallbackDefaultSubset,
				DefaultSubset: match(t, map[string]any{"zone": "x"}).MetadataMatch.Criteria,
				Selectors:     []SubsetSelector{{Keys: []string{"tier", "zone"}}},
			}
			s := NewSubsetBalancer([][]*upstream.Host{hosts}, sc, Config{}, nil)
			ctx := match(t, tc.criteria)
			if tc.criteria == nil {
				ctx = nil
			}
			if got := balancedOver(s, ctx, 4); got != tc.want {
				t.Errorf("balances over %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSubsetMetadataFallbackList(t *testing.T) {
	sc := &SubsetConfig{FallbackList: true, Selectors: []SubsetSelector{{Keys: []string{"stage", "v"}}, {Keys: []string{"stage"}}}}
	s := NewSubsetBalancer([][]*upstream.Host{docHosts(t)}, sc, Config{}, nil)
	tests := map[string]struct {
		criteria map[string]any
		want     string
	}{
		"the first entry that finds a host wins": {
			criteria: map[string]any{"stage": "prod", "fallback_list": []any{
				map[string]any{"v": "9"}, map[string]any{"v": "1.1", "stage": "canary"}, map[string]any{"v": "1.0"},
			}},
			want: "host3",
		},
		"entries merge over the other criteria": {
			criteria: map[string]any{"stage": "prod", "fallback_list": []any{map[string]any{"v": "1.0"}}},
			want:     "host1, host2",
		},
		"no entry finds a host": {
			criteria: map[string]any{"stage": "prod", "fallback_list": []any{map[string]any{"v": "9"}}},
			want:     "empty",
		},
		"an empty list: the other criteria": {
			criteria: map[string]any{"stage": "dev", "fallback_list": []any{}},
			want:     "host4",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := balancedOver(s, match(t, tc.criteria), 4); got != tc.want {
				t.Errorf("balances over %s, want %s", got, tc.want)
			}
		})
	}
	// Without FALLBACK_LIST the list is an ordinary criterion.
	plain := NewSubsetBalancer([][]*upstream.Host{docHosts(t)}, &SubsetConfig{Selectors: sc.Selectors}, Config{}, nil)
	if got := balancedOver(plain, match(t, map[string]any{"stage": "dev", "fallback_list": []any{}}), 4); got != "empty" {
		t.Errorf("without FALLBACK_LIST balances over %s, want empty", got)
	}
}

func TestSubsetSingleHostPerSubset(t *testing.T) {
	hosts := []*upstream.Host{
		withMetadata(t, &upstream.Host{Address: "a", Weight: 1, ConfigHealth: corev3.HealthStatus_UNHEALTHY}, map[string]any{"id": "1"}),
		withMetadata(t, &upstream.Host{Address: "b", Weight: 1}, map[string]any{"id": "1"}),
		withMetadata(t, &upstream.Host{Address: "c", Weight: 1}, map[string]any{"id": "2"}),
	}
	p1 := []*upstream.Host{withMetadata(t, &upstream.Host{Address: "d", Weight: 1, Priority: 1}, map[string]any{"id": "3"})}
	st, store := newSubsetStats()
	s := NewSubsetBalancer([][]*upstream.Host{hosts, p1}, &SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"id"}, SingleHostPerSubset: true}}}, Config{Stats: st}, nil)
	for id, want := range map[string]string{"1": "a", "2": "c", "3": "d"} {
		if got := balancedOver(s, match(t, map[string]any{"id": id}), 3); got != want {
			t.Errorf("id %s balances over %s, want %s (the first host, whatever its health)", id, got, want)
		}
	}
	// Envoy builds the subsets one level after the other and the gauge is
	// the last level's count: P1 has no duplicate.
	gauge := store.Gauge("lb_subsets_single_host_per_subset_duplicate")
	if got := gauge.Value(); got != 0 {
		t.Errorf("lb_subsets_single_host_per_subset_duplicate = %d after the first set, want 0 (P1's)", got)
	}
	// A change of P0 only: the gauge is P0's count, a for id 1 passing
	// over b, and e for id 2 over c.
	e := withMetadata(t, &upstream.Host{Address: "e", Weight: 1}, map[string]any{"id": "2"})
	s = s.Update([][]*upstream.Host{append(slices.Clone(hosts), e), p1}, &Change{Added: []*upstream.Host{e}}, s.cfg, Config{Stats: st})
	if got := gauge.Value(); got != 2 {
		t.Errorf("lb_subsets_single_host_per_subset_duplicate = %d after a change of P0, want 2", got)
	}
	if got := balancedOver(s, match(t, map[string]any{"id": "2"}), 3); got != "c" {
		t.Errorf("id 2 balances over %s, want c (the first host)", got)
	}
	// c leaves: e is id 2's host.
	s = s.Update([][]*upstream.Host{{hosts[0], hosts[1], e}, p1}, &Change{Removed: []*upstream.Host{hosts[2]}}, s.cfg, Config{Stats: st})
	if got := balancedOver(s, match(t, map[string]any{"id": "2"}), 3); got != "e" {
		t.Errorf("id 2 balances over %s once c left, want e", got)
	}
	if got := gauge.Value(); got != 1 {
		t.Errorf("lb_subsets_single_host_per_subset_duplicate = %d, want 1", got)
	}
}

// TestSubsetRebuild checks the created, removed and active stats across a
// change of hosts.
func TestSubsetRebuild(t *testing.T) {
	st, store := newSubsetStats()
	sc := &SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"stage"}}}}
	hosts := docHosts(t)
	first := NewSubsetBalancer([][]*upstream.Host{hosts}, sc, Config{Stats: st}, nil)
	// host4 (dev) leaves, a qa host comes.
	next := append(hosts[:3:3], withMetadata(t, &upstream.Host{Address: "host5", Weight: 1}, map[string]any{"stage": "qa"}))
	second := NewSubsetBalancer([][]*upstream.Host{next}, sc, Config{Stats: st}, first)
	want := map[string]uint64{"lb_subsets_created": 4, "lb_subsets_removed": 1}
	if diff := cmp.Diff(want, counters(store)); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if got := store.Gauge("lb_subsets_active").Value(); got != 3 || second.Subsets() != 3 {
		t.Errorf("lb_subsets_active = %d, Subsets() = %d, want 3", got, second.Subsets())
	}
	if got := balancedOver(second, match(t, map[string]any{"stage": "qa"}), 2); got != "host5" {
		t.Errorf("stage=qa balances over %s, want host5", got)
	}
}

// TestSubsetPriorities checks that a subset keeps the priority levels of
// the cluster: its hosts spill over to lower priorities by health.
func TestSubsetPriorities(t *testing.T) {
	p0 := []*upstream.Host{
		withMetadata(t, &upstream.Host{Address: "p0a", Weight: 1}, map[string]any{"stage": "prod"}),
		withMetadata(t, &upstream.Host{Address: "p0b", Weight: 1, ConfigHealth: corev3.HealthStatus_UNHEALTHY}, map[string]any{"stage": "prod"}),
		withMetadata(t, &upstream.Host{Address: "p0c", Weight: 1}, map[string]any{"stage": "dev"}),
	}
	p1 := []*upstream.Host{withMetadata(t, &upstream.Host{Address: "p1a", Weight: 1, Priority: 1}, map[string]any{"stage": "prod"})}
	s := NewSubsetBalancer([][]*upstream.Host{p0, p1}, &SubsetConfig{Selectors: []SubsetSelector{{Keys: []string{"stage"}}}}, Config{Rand: seeded()}, nil)
	counts := map[string]int{}
	for range 1000 {
		h, _ := s.Pick(match(t, map[string]any{"stage": "prod"}))
		counts[h.Address]++
	}
	// prod at P0: 1 of 2 healthy, 70%; P1 takes 30%.
	if counts["p0a"] < 650 || counts["p0a"] > 750 || counts["p1a"] < 250 || counts["p1a"] > 350 || len(counts) != 2 {
		t.Errorf("picks %v, want about 700 p0a and 300 p1a", counts)
	}
}

// TestSubsetLocalityWeights checks locality_weight_aware and
// scale_locality_weight.
func TestSubsetLocalityWeights(t *testing.T) {
	// Localities a (weight 1, 4 hosts, 1 in the subset) and b (weight 1,
	// 1 host, in the subset).
	var level []*upstream.Host
	for i, spec := range []struct {
		zone, stage string
	}{{"a", "x"}, {"a", "y"}, {"a", "y"}, {"a", "y"}, {"b", "x"}} {
		h := withMetadata(t, &upstream.Host{Address: spec.zone + string(rune('0'+i)), Weight: 1, LocalityWeight: 1,
			Locality: upstream.Locality{Zone: spec.zone}}, map[string]any{"stage": spec.stage})
		level = append(level, h)
	}
	tests := map[string]struct {
		sc    SubsetConfig
		wantA float64
	}{
		"not locality aware: hosts share evenly":      {sc: SubsetConfig{}, wantA: 50},
		"locality aware: localities share evenly":     {sc: SubsetConfig{LocalityWeightAware: true}, wantA: 50},
		"scaled: a's weight is 1 x 1/4, rounded to 0": {sc: SubsetConfig{LocalityWeightAware: true, ScaleLocalityWeight: true}, wantA: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sc := tc.sc
			sc.Selectors = []SubsetSelector{{Keys: []string{"stage"}}}
			s := NewSubsetBalancer([][]*upstream.Host{level}, &sc, Config{LocalityWeighted: true, Rand: seeded()}, nil)
			var a int
			for range 1000 {
				h, _ := s.Pick(match(t, map[string]any{"stage": "x"}))
				if h.Locality.Zone == "a" {
					a++
				}
			}
			if got := float64(a) / 10; got < tc.wantA-2 || got > tc.wantA+2 {
				t.Errorf("%.1f%% of the picks in a, want %v%%", got, tc.wantA)
			}
		})
	}
}

func TestSubsetPickDoesNotAllocate(t *testing.T) {
	s := NewSubsetBalancer([][]*upstream.Host{docHosts(t)}, &SubsetConfig{Fallback: FallbackAnyEndpoint, Selectors: []SubsetSelector{{Keys: []string{"stage"}}}}, Config{}, nil)
	for name, ctx := range map[string]*upstream.PickContext{
		"subset":   match(t, map[string]any{"stage": "prod"}),
		"fallback": match(t, map[string]any{"stage": "none"}),
		"none":     nil,
	} {
		if allocs := testing.AllocsPerRun(100, func() { s.Pick(ctx) }); allocs != 0 {
			t.Errorf("%s: Pick allocates %v times per call", name, allocs)
		}
	}
}
