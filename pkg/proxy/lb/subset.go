package lb

import (
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// SubsetFallback is what a subset balancer does with a request whose
// criteria match no subset (lb_subset_config.fallback_policy).
type SubsetFallback int

// The fallback policies of lb_subset_config, and of a selector.
const (
	// FallbackNotDefined, for a selector, defers to the cluster's policy.
	FallbackNotDefined SubsetFallback = iota
	// FallbackNone fails the request as if the cluster had no host.
	FallbackNone
	// FallbackAnyEndpoint balances over every host of the cluster.
	FallbackAnyEndpoint
	// FallbackDefaultSubset balances over the hosts matching
	// default_subset.
	FallbackDefaultSubset
	// FallbackKeysSubset, for a selector, tries again with the criteria
	// cut down to the selector's fallback_keys_subset.
	FallbackKeysSubset
)

// MetadataFallbackListKey is the criterion whose list of structs the
// FALLBACK_LIST metadata fallback policy tries in turn.
const MetadataFallbackListKey = "fallback_list"

// SubsetConfig is a cluster's lb_subset_config, checked.
type SubsetConfig struct {
	// Fallback is fallback_policy (FallbackNone, FallbackAnyEndpoint or
	// FallbackDefaultSubset); DefaultSubset is default_subset's fields.
	Fallback      SubsetFallback
	DefaultSubset []upstream.MatchCriterion
	// Selectors are the subset_selectors.
	Selectors []SubsetSelector
	// LocalityWeightAware keeps locality-weighted balancing within
	// subsets; ScaleLocalityWeight scales each locality's weight by the
	// share of its hosts that are in the subset.
	LocalityWeightAware, ScaleLocalityWeight bool
	// PanicModeAny: when the fallback subset has no host, any host is
	// chosen.
	PanicModeAny bool
	// ListAsAny: a list value in a host's metadata matches any of its
	// elements.
	ListAsAny bool
	// FallbackList is metadata_fallback_policy FALLBACK_LIST: the
	// criteria's fallback_list entries are tried in turn.
	FallbackList bool
}

// SubsetSelector is one of subset_selectors.
type SubsetSelector struct {
	// Keys are the metadata keys of the selector's subsets, sorted and
	// unique.
	Keys []string
	// SingleHostPerSubset makes each subset one host: the first in
	// priority order, whatever its health.
	SingleHostPerSubset bool
	// Fallback is the selector's fallback_policy; FallbackKeys its
	// fallback_keys_subset (FallbackKeysSubset), sorted.
	Fallback     SubsetFallback
	FallbackKeys []string
}

// SubsetBalancer is Envoy's subset load balancer: the cluster's hosts are
// divided into subsets by their "envoy.lb" metadata, one subset per
// combination of values of each selector's keys, each with a Balancer of
// its own over its hosts (all priority levels kept); a request's
// metadata_match criteria choose the subset, and when none matches a
// fallback policy applies. It is only read once built; a change of hosts
// makes the next one (Update), which keeps what the change left alone.
type SubsetBalancer struct {
	cfg   *SubsetConfig
	stats *Stats
	// subsets are the subsets with at least one host, by key (the
	// canonical form of their names and values, see
	// upstream.MetadataMatch.Key).
	subsets map[string]*subsetEntry
	// selectors is the tree of selector keys, in key order, that finds a
	// selector's fallback policy from a request's criteria names.
	selectors *selectorNode
	// any and def are the subsets of every host and of default_subset's
	// hosts, built when a fallback policy may use them; fallback is the
	// cluster's fallback subset (nil for NO_FALLBACK) and panic the
	// subset of panic_mode_any.
	any, def, fallback, panic *Balancer
	// levels are the cluster's hosts per level, and defLevels def's.
	levels, defLevels [][]*upstream.Host
	// settled is what the subsets' loads were computed with: a subset
	// the next update leaves alone keeps its balancer when it is the
	// same.
	settled settledWith
	// duplicates are, per level, the hosts that single-host subsets
	// passed over (lb_subsets_single_host_per_subset_duplicate).
	duplicates []int
}

// subsetEntry is one subset: a balancer, or one host for a
// single_host_per_subset selector.
type subsetEntry struct {
	balancer *Balancer
	single   *upstream.Host
	// levels are the subset's hosts per priority level, in the level's
	// order (one list per level of the cluster, some empty).
	levels [][]*upstream.Host
	// hits are, for a single-host subset, how many times per level a
	// host fell in it (once per selector and value giving its key).
	hits []int
}

func (e *subsetEntry) pick(ctx *upstream.PickContext) (*upstream.Host, bool) {
	if e.balancer == nil {
		return e.single, false
	}
	return e.balancer.Pick(ctx)
}

// duplicates is how many of its hits at level p a single-host subset
// passed over.
func (e *subsetEntry) duplicates(p int) int {
	if e.balancer != nil || p >= len(e.hits) || e.hits[p] == 0 {
		return 0
	}
	return e.hits[p] - 1
}

// settle makes the entry's host or balancer from its levels; prev is the
// entry it replaces (nil for a new subset) and ch the change of its hosts
// (nil: unknown, all levels built again).
func (e *subsetEntry) settle(prev *subsetEntry, ch *Change, cfg Config) {
	if e.hits != nil {
		for _, level := range e.levels {
			if len(level) > 0 {
				// The highest priority's first host, whatever its health.
				e.single = level[0]
				return
			}
		}
		return
	}
	if prev == nil || prev.balancer == nil {
		e.balancer = New(e.levels, cfg)
		return
	}
	e.balancer = prev.balancer.Update(e.levels, ch, cfg)
}

// empty reports whether the subset has no host left.
func (e *subsetEntry) empty() bool {
	for _, level := range e.levels {
		if len(level) > 0 {
			return false
		}
	}
	return true
}

// selectorNode is one key of the selectors' tree: the children by next
// key, and the fallback of the selector whose last key this is.
type selectorNode struct {
	children     map[string]*selectorNode
	fallback     SubsetFallback
	fallbackKeys []string
}

// settledWith is what of the configuration a subset's balancer reads
// beyond its hosts.
type settledWith struct {
	levels                 int
	factor, panicThreshold uint32
	weighted, failOnPanic  bool
}

// settledWithOf is cfg's settledWith for n levels.
func settledWithOf(n int, cfg Config) settledWith {
	return settledWith{levels: n, factor: cfg.OverprovisioningFactor, panicThreshold: cfg.PanicThreshold, weighted: cfg.WeightedPriorityHealth, failOnPanic: cfg.FailTrafficOnPanic}
}

// subsetHit is a subset a host falls in: its key, how many times (once
// per selector and list value giving it) and whether the subset is a
// single host.
type subsetHit struct {
	key    string
	count  int
	single bool
}

// hostSubsets returns the subsets a host falls in, each once. As in
// Envoy, the first selector to give a subset decides whether it is a
// single host: selectors giving the same key have the same keys, so the
// first of them in configuration order decides, whichever host comes
// first.
func (sc *SubsetConfig) hostSubsets(h *upstream.Host) []subsetHit {
	var out []subsetHit
	for _, sel := range sc.Selectors {
		for _, key := range subsetKeys(sel.Keys, h, sc.ListAsAny) {
			if i := slices.IndexFunc(out, func(x subsetHit) bool { return x.key == key }); i >= 0 {
				out[i].count++
				continue
			}
			out = append(out, subsetHit{key: key, count: 1, single: sel.SingleHostPerSubset})
		}
	}
	return out
}

// childConfig is the configuration of the subsets' balancers: a subset
// keeps the localities of the whole host set, so that zone routing and
// locality weights see the same localities, some of them empty.
func (sc *SubsetConfig) childConfig(priorities [][]*upstream.Host, cfg Config) Config {
	childCfg := cfg
	childCfg.LocalityWeighted = cfg.LocalityWeighted && sc.LocalityWeightAware
	if childCfg.LocalityWeighted || cfg.Zone != nil {
		childCfg.subsetOf = make([]localities, len(priorities))
		for i, hosts := range priorities {
			childCfg.subsetOf[i] = groupLocalities(hosts, cfg.Local, nil)
		}
		if childCfg.LocalityWeighted && sc.ScaleLocalityWeight {
			childCfg.localityWeight = scaledLocalityWeight(childCfg.subsetOf)
		}
	}
	return childCfg
}

// needs reports which of the fallback subsets the policies may use.
func (sc *SubsetConfig) needs() (anyEndpoint, defaultSubset bool) {
	anyEndpoint = sc.Fallback == FallbackAnyEndpoint || sc.PanicModeAny
	defaultSubset = sc.Fallback == FallbackDefaultSubset
	for _, sel := range sc.Selectors {
		anyEndpoint = anyEndpoint || sel.Fallback == FallbackAnyEndpoint
		defaultSubset = defaultSubset || sel.Fallback == FallbackDefaultSubset
	}
	return anyEndpoint, defaultSubset
}

// NewSubsetBalancer divides hosts (per priority) into subsets and builds
// their balancers with cfg. prev is the balancer this one replaces (nil
// for the first): its subsets' balancers carry on into the new ones of
// the same subsets (round robin keeps its place, Balancer.Update with
// the change unknown); subsets that appear or disappear are counted in
// lb_subsets_created and lb_subsets_removed, and lb_subsets_active is
// set.
func NewSubsetBalancer(priorities [][]*upstream.Host, sc *SubsetConfig, cfg Config, prev *SubsetBalancer) *SubsetBalancer {
	s := &SubsetBalancer{cfg: sc, stats: cfg.Stats, subsets: map[string]*subsetEntry{}, selectors: newSelectorTree(sc.Selectors), settled: settledWithOf(len(priorities), cfg), levels: priorities}
	childCfg := sc.childConfig(priorities, cfg)
	var was SubsetBalancer
	if prev != nil {
		was = *prev
	}

	needAny, needDefault := sc.needs()
	if needAny {
		s.any = was.any.Update(priorities, nil, childCfg)
	}
	if needDefault {
		s.defLevels = make([][]*upstream.Host, len(priorities))
		for i, hosts := range priorities {
			for _, h := range hosts {
				if labelsMatch(sc.DefaultSubset, h, sc.ListAsAny) {
					s.defLevels[i] = append(s.defLevels[i], h)
				}
			}
		}
		s.def = was.def.Update(s.defLevels, nil, childCfg)
	}
	s.pickFallbacks()

	// The subsets: every combination of values a host has for all of a
	// selector's keys.
	for i, hosts := range priorities {
		for _, h := range hosts {
			for _, hit := range sc.hostSubsets(h) {
				e := s.subsets[hit.key]
				if e == nil {
					e = &subsetEntry{levels: make([][]*upstream.Host, len(priorities))}
					if hit.single {
						e.hits = make([]int, len(priorities))
					}
					s.subsets[hit.key] = e
				}
				e.levels[i] = append(e.levels[i], h)
				if e.hits != nil {
					e.hits[i] += hit.count
				}
			}
		}
	}
	s.duplicates = make([]int, len(priorities))
	for key, e := range s.subsets {
		e.settle(was.subsets[key], nil, childCfg)
		for i := range s.duplicates {
			s.duplicates[i] += e.duplicates(i)
		}
	}

	created, removed := 0, 0
	for key := range s.subsets {
		if _, ok := was.subsets[key]; !ok {
			created++
		}
	}
	for key := range was.subsets {
		if _, ok := s.subsets[key]; !ok {
			removed++
		}
	}
	s.count(created, removed, lastChanged(prev, priorities))
	return s
}

// pickFallbacks sets the fallback and panic balancers from any and def.
func (s *SubsetBalancer) pickFallbacks() {
	switch s.cfg.Fallback {
	case FallbackAnyEndpoint:
		s.fallback = s.any
	case FallbackDefaultSubset:
		s.fallback = s.def
	}
	if s.cfg.PanicModeAny {
		s.panic = s.any
	}
}

// count adds the subsets created and removed to the stats, sets
// lb_subsets_active, and sets lb_subsets_single_host_per_subset_duplicate
// to the duplicates of the last level updated (last, -1 for none): Envoy
// updates the subsets one level at a time, and the gauge is the count of
// the last one.
func (s *SubsetBalancer) count(created, removed, last int) {
	st := s.stats
	if st == nil {
		return
	}
	st.add(SubsetsCreated, created)
	st.add(SubsetsRemoved, removed)
	if st.SubsetsActive != nil {
		st.SubsetsActive.Set(int64(len(s.subsets)))
	}
	if st.SubsetsSingleHostDuplicate != nil && last >= 0 {
		d := 0
		if last < len(s.duplicates) {
			d = s.duplicates[last]
		}
		st.SubsetsSingleHostDuplicate.Set(int64(d))
	}
}

// newSelectorTree builds the tree of selector keys. As in Envoy, a node's
// fallback is set by the selector that creates it, when that selector
// ends there: a later selector ending at an existing node does not change
// it.
func newSelectorTree(sels []SubsetSelector) *selectorNode {
	root := &selectorNode{children: map[string]*selectorNode{}}
	for _, sel := range sels {
		n := root
		for i, k := range sel.Keys {
			child := n.children[k]
			if child == nil {
				child = &selectorNode{children: map[string]*selectorNode{}}
				if i == len(sel.Keys)-1 {
					child.fallback, child.fallbackKeys = sel.Fallback, sel.FallbackKeys
				}
				n.children[k] = child
			}
			n = child
		}
	}
	return root
}

// scaledLocalityWeight is scale_locality_weight: a locality's weight in
// a subset is its weight times the share of its hosts in the subset,
// rounded, computed in float32 as Envoy does.
func scaledLocalityWeight(whole []localities) func(level, index int, g *localityGroup) uint32 {
	return func(level, index int, g *localityGroup) uint32 {
		orig := &whole[level].groups[index]
		if len(orig.all) == 0 {
			return 0
		}
		w := orig.all[0].LocalityWeight
		return uint32(math.Round(float64(float32(w*uint32(len(g.all))) / float32(len(orig.all)))))
	}
}

// lbFields returns a host's "envoy.lb" metadata fields, nil when it has
// none.
func lbFields(h *upstream.Host) map[string]*structpb.Value {
	s, ok := h.Metadata.GetFilterMetadata()[upstream.LBMetadataKey]
	if !ok {
		return nil
	}
	return s.GetFields()
}

// subsetKeys returns the keys of the subsets a host belongs to for one
// selector: none when it lacks one of the keys; one, or with list_as_any
// one per combination of the elements of its list values.
func subsetKeys(keys []string, h *upstream.Host, listAsAny bool) []string {
	fields := lbFields(h)
	if fields == nil {
		return nil
	}
	prefixes := []string{""}
	for _, k := range keys {
		v, ok := fields[k]
		if !ok {
			return nil
		}
		values := []*structpb.Value{v}
		if list := v.GetListValue(); listAsAny && list != nil {
			values = list.GetValues()
		}
		next := make([]string, 0, len(prefixes)*len(values))
		for _, p := range prefixes {
			for _, e := range values {
				var b strings.Builder
				b.WriteString(p)
				upstream.AppendSubsetKey(&b, k, e)
				next = append(next, b.String())
			}
		}
		prefixes = next
	}
	return prefixes
}

// labelsMatch is Envoy's metadataLabelMatch: the host's "envoy.lb"
// metadata has every label's value (with list_as_any, a list holding it
// will do). A host without metadata matches only no labels.
func labelsMatch(labels []upstream.MatchCriterion, h *upstream.Host, listAsAny bool) bool {
	fields := lbFields(h)
	if fields == nil {
		return len(labels) == 0
	}
	for _, l := range labels {
		v, ok := fields[l.Name]
		if !ok {
			return false
		}
		want := upstream.ValueKey(l.Value)
		if list := v.GetListValue(); listAsAny && list != nil {
			if !slices.ContainsFunc(list.GetValues(), func(e *structpb.Value) bool { return upstream.ValueKey(e) == want }) {
				return false
			}
			continue
		}
		if upstream.ValueKey(v) != want {
			return false
		}
	}
	return true
}

// Pick chooses a host for a request: in the subset its criteria
// (ctx.MetadataMatch) name, else by the fallback policies. panicked
// reports a pick from a balancer in panic mode.
func (s *SubsetBalancer) Pick(ctx *upstream.PickContext) (h *upstream.Host, panicked bool) {
	var mm *upstream.MetadataMatch
	if ctx != nil {
		mm = ctx.MetadataMatch
	}
	if s.cfg.FallbackList {
		if v, ok := mm.Get(MetadataFallbackListKey); ok {
			base := mm.Without(MetadataFallbackListKey)
			list := v.GetListValue().GetValues()
			if len(list) == 0 {
				return s.pickIteration(ctx, base)
			}
			for _, override := range list {
				h, p := s.pickIteration(ctx, base.Merge(override.GetStructValue().GetFields()))
				panicked = panicked || p
				if h != nil {
					return h, panicked
				}
			}
			return nil, panicked
		}
	}
	return s.pickIteration(ctx, mm)
}

// pickIteration is Envoy's chooseHostIteration for one set of criteria
// (nil: none).
func (s *SubsetBalancer) pickIteration(ctx *upstream.PickContext, mm *upstream.MetadataMatch) (*upstream.Host, bool) {
	if ctx != nil && mm != nil {
		if len(mm.Criteria) > 0 {
			if e := s.subsets[mm.Key()]; e != nil {
				s.stats.inc(SubsetsSelected)
				// A subset that exists decides, even when it finds no host.
				return e.pick(ctx)
			}
		}
		if n := s.selectorFor(mm); n != nil && n.fallback != FallbackNotDefined {
			return s.pickSelectorFallback(ctx, mm, n)
		}
	}
	if s.fallback == nil {
		return nil, false
	}
	h, panicked := s.fallback.Pick(ctx)
	if h != nil {
		s.stats.inc(SubsetsFallback)
		return h, panicked
	}
	if s.panic != nil {
		h, p := s.panic.Pick(ctx)
		if h != nil {
			s.stats.inc(SubsetsFallbackPanic)
			return h, panicked || p
		}
	}
	return nil, panicked
}

// selectorFor finds the selector whose keys are exactly the criteria's
// names, nil when there is none.
func (s *SubsetBalancer) selectorFor(mm *upstream.MetadataMatch) *selectorNode {
	n := s.selectors
	for i, c := range mm.Criteria {
		child := n.children[c.Name]
		if child == nil {
			return nil
		}
		if i == len(mm.Criteria)-1 {
			return child
		}
		n = child
	}
	return nil
}

// pickSelectorFallback applies a selector's own fallback policy.
func (s *SubsetBalancer) pickSelectorFallback(ctx *upstream.PickContext, mm *upstream.MetadataMatch, n *selectorNode) (*upstream.Host, bool) {
	switch {
	case n.fallback == FallbackAnyEndpoint && s.any != nil:
		return s.any.Pick(ctx)
	case n.fallback == FallbackDefaultSubset && s.def != nil:
		return s.def.Pick(ctx)
	case n.fallback == FallbackKeysSubset:
		return s.pickIteration(ctx, mm.Filter(n.fallbackKeys))
	}
	return nil, false
}

// Subsets returns the number of subsets with hosts, for tests and
// diagnostics.
func (s *SubsetBalancer) Subsets() int { return len(s.subsets) }
