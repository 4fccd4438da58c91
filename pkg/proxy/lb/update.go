package lb

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Change is what an update of a host set knows of the set it replaces:
// the hosts it added and the ones it removed, by identity (a host's
// Priority is its level). The hosts of both sets not listed are the same
// hosts.
type Change struct {
	Added, Removed []*upstream.Host
}

// builtWith is what of a balancer's configuration an update must find
// unchanged to start from it: the rest (the loads' factor and threshold)
// is applied anew.
type builtWith struct {
	weighted, localities bool
}

// builtWithOf is cfg's builtWith.
func builtWithOf(cfg *Config) builtWith {
	return builtWith{
		weighted:   cfg.WeightedPriorityHealth,
		localities: cfg.LocalityWeighted || cfg.Zone != nil || cfg.subsetOf != nil,
	}
}

// Update returns the balancer of priorities, a host set that replaced b's
// by ch (nil when the change is not known), as New builds it but carrying
// on from b as Envoy's balancers do on a host set update: round robin
// keeps its place in the cycle (Envoy keeps each host list's index), and
// least request reads the active requests of the hosts, which stay the
// same hosts. Ring hash and maglev tables, and the weighted schedules, are
// built again for a level that changed, as Envoy's are.
//
// With ch known, the work is in proportion to the change where it can
// be: a level the change left alone keeps its pickers and health counts;
// one it changed, whose hosts were all healthy and whose added hosts
// are, keeps its health split without looking at every host, and its
// round robin, least request or random picker over hosts of equal weight
// takes the new list as it is. Locality weighting and zone routing build
// the whole balancer again.
func (b *Balancer) Update(priorities [][]*upstream.Host, ch *Change, cfg Config) *Balancer {
	if ch == nil || b == nil || b.built != builtWithOf(&cfg) || b.built.localities {
		if ch != nil && b != nil && cfg.Zone != nil && !touchesLevel(ch, 0) {
			// Envoy regenerates zone routing on a change of priority 0
			// (or of the local cluster) only.
			cfg.zoneUnchanged = true
		}
		return New(priorities, cfg).carryFrom(b)
	}
	cfg.defaults()
	seed := cfg.Rand() // as New draws it: the random source moves alike
	added, removed := byLevel(ch.Added, len(priorities)), byLevel(ch.Removed, len(b.levels))
	nb := newBalancer(len(priorities), &cfg)
	counts := make([]levelCounts, len(priorities))
	for i, hosts := range priorities {
		var old *level
		if i < len(b.levels) {
			old = &b.levels[i]
		}
		var gone []*upstream.Host
		if i < len(removed) {
			gone = removed[i]
		}
		nb.levels[i] = old.updated(hosts, added[i], gone, seed, &cfg)
		counts[i] = nb.levels[i].state.counts()
	}
	nb.settle(counts, &cfg)
	return nb.carryFrom(b)
}

// touchesLevel reports whether ch adds or removes a host of level p.
func touchesLevel(ch *Change, p uint32) bool {
	for _, h := range ch.Added {
		if h.Priority == p {
			return true
		}
	}
	for _, h := range ch.Removed {
		if h.Priority == p {
			return true
		}
	}
	return false
}

// byLevel groups hosts by their priority, below n levels (a removed
// host's level may be gone).
func byLevel(hosts []*upstream.Host, n int) [][]*upstream.Host {
	out := make([][]*upstream.Host, n)
	for _, h := range hosts {
		if p := int(h.Priority); p < n {
			out[p] = append(out[p], h)
		}
	}
	return out
}

// levelState is what an update keeps of a level's health counts
// (levelCounts), small: every cluster's balancer has one per level.
type levelState struct {
	total, healthy, degraded, excluded uint32
	// weights are the weight sums, with weighted priority health only.
	weights *[3]uint64
}

// stateOf is c's levelState.
func stateOf(c levelCounts) levelState {
	s := levelState{total: uint32(c.total), healthy: uint32(c.healthy), degraded: uint32(c.degraded), excluded: uint32(c.excluded)}
	if c.weighted {
		s.weights = &[3]uint64{c.totalWeight, c.healthyWeight, c.degradedWeight}
	}
	return s
}

// counts is the levelCounts s keeps.
func (s levelState) counts() levelCounts {
	c := levelCounts{total: int(s.total), healthy: int(s.healthy), degraded: int(s.degraded), excluded: int(s.excluded)}
	if w := s.weights; w != nil {
		c.weighted = true
		c.totalWeight, c.healthyWeight, c.degradedWeight = w[0], w[1], w[2]
	}
	return c
}

// updated is the level of hosts that replaced old (nil for a new level)
// by adding added and removing gone.
func (old *level) updated(hosts, added, gone []*upstream.Host, seed uint64, cfg *Config) level {
	if old != nil && len(added) == 0 && len(gone) == 0 {
		// Untouched: the same pickers go on. The same hosts in another
		// order keep the old order, as Envoy leaves a priority whose
		// hosts did not change as it was.
		return *old
	}
	if old == nil || !old.allHealthy() || !allHealthy(added) {
		healthy, degraded, c := splitHealth(hosts, cfg.WeightedPriorityHealth)
		return level{
			all:      newPicker(cfg.NewPicker, hosts, seed),
			healthy:  newPicker(cfg.NewPicker, healthy, seed),
			degraded: newPicker(cfg.NewPicker, degraded, seed),
			state:    stateOf(c),
		}
	}
	// Every host healthy before and every added one too: so are all the
	// level's, whose health split is the list itself.
	c := levelCounts{total: len(hosts), healthy: len(hosts)}
	if cfg.WeightedPriorityHealth {
		c.weighted = true
		c.totalWeight = old.state.weights[0] + sumWeights(added) - sumWeights(gone)
		c.healthyWeight = c.totalWeight
	}
	return level{
		all:     updatedPicker(old.all, hosts, added, seed, cfg.NewPicker),
		healthy: updatedPicker(old.healthy, hosts, added, seed, cfg.NewPicker),
		state:   stateOf(c),
	}
}

// allHealthy reports whether every host of the level was healthy, not
// degraded, when it was built.
func (lv *level) allHealthy() bool {
	return lv.state.healthy == lv.state.total && lv.state.excluded == 0
}

// allHealthy reports whether every host is healthy and not degraded.
func allHealthy(hosts []*upstream.Host) bool {
	for _, h := range hosts {
		if !h.Healthy() || h.Degraded() {
			return false
		}
	}
	return true
}

// hostsUpdater is a picker that can take a new host list, the old one
// with added joined (and some left), without the work of building it
// anew: nil when it cannot (then the policy's factory builds it).
type hostsUpdater interface {
	withHosts(hosts, added []*upstream.Host) Picker
}

// updatedPicker is the picker of hosts replacing old's list, old's
// update when it has one, else f's.
func updatedPicker(old Picker, hosts, added []*upstream.Host, seed uint64, f PickerFactory) Picker {
	if len(hosts) == 0 {
		return nil
	}
	if u, ok := old.(hostsUpdater); ok {
		if p := u.withHosts(hosts, added); p != nil {
			return p
		}
	}
	return f(hosts, seed)
}

// sameWeight reports whether every host of added has weight w: a list of
// equal weights stays one.
func sameWeight(added []*upstream.Host, w uint32) bool {
	for _, h := range added {
		if hostWeight(h) != w {
			return false
		}
	}
	return true
}

// withHosts: plain round robin over equal weights stays one, at the same
// place of its cycle (carryFrom sets it).
func (rr *RoundRobin) withHosts(hosts, added []*upstream.Host) Picker {
	if !rr.plain || rr.edf != nil || !sameWeight(added, hostWeight(rr.hosts[0])) {
		return nil
	}
	return &RoundRobin{hosts: hosts, plain: true}
}

// withHosts: least request over equal weights stays one.
func (p *leastRequest) withHosts(hosts, added []*upstream.Host) Picker {
	if p.slow || !sameWeight(added, hostWeight(p.hosts[0])) {
		return nil
	}
	return &leastRequest{hosts: hosts, choices: p.choices, fullScan: p.fullScan, rand: p.rand}
}

// withHosts: random reads nothing of its hosts but the list.
func (p *random) withHosts(hosts, _ []*upstream.Host) Picker {
	return &random{hosts: hosts, rand: p.rand}
}

// carryFrom gives b's round robin pickers over equal weights the places
// in their cycles of old's of the same level and host source (old may be
// nil), as Envoy keeps a host list's round robin index across updates.
// It returns b.
func (b *Balancer) carryFrom(old *Balancer) *Balancer {
	if old == nil {
		return b
	}
	for i := range min(len(b.levels), len(old.levels)) {
		lv, was := &b.levels[i], &old.levels[i]
		carry(lv.all, was.all)
		carry(lv.healthy, was.healthy)
		carry(lv.degraded, was.degraded)
	}
	return b
}

// carry sets p's place in its cycle to was's, when both are plain round
// robin over equal weights and p is not was itself.
func carry(p, was Picker) {
	rr, ok := p.(*RoundRobin)
	old, ok2 := was.(*RoundRobin)
	if !ok || !ok2 || rr == old || rr.edf != nil || old.edf != nil {
		return
	}
	rr.next.Store(old.next.Load())
}
