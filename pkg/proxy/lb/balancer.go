package lb

import (
	"math/rand/v2"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Envoy's defaults for the priority computation.
const (
	// DefaultOverprovisioningFactor (percent) lets a priority level keep
	// all its traffic while at least 100/140 (about 71%) of its hosts are
	// healthy.
	DefaultOverprovisioningFactor = 140
	// DefaultPanicThreshold (percent): below this share of available
	// hosts, a level balances over all its hosts, healthy or not, rather
	// than overload the few healthy ones.
	DefaultPanicThreshold = 50
)

// Config tunes a Balancer.
type Config struct {
	// OverprovisioningFactor in percent; 0 means
	// DefaultOverprovisioningFactor.
	OverprovisioningFactor uint32
	// WeightedPriorityHealth (the load assignment's
	// policy.weighted_priority_health) makes a level's health the share
	// of its hosts' weights that are healthy rather than the share of its
	// hosts.
	WeightedPriorityHealth bool
	// PanicThreshold in percent (0 to 100; more counts as 100). 0 turns
	// panic mode off; callers wanting Envoy's default pass
	// DefaultPanicThreshold.
	PanicThreshold uint32
	// NewPicker builds the per-list policy; nil means round robin.
	NewPicker PickerFactory
	// HashBased: the pickers route on the pick's hash key, which then
	// chooses the priority level too, as with Envoy's ring hash and
	// maglev (Policy.HashBased).
	HashBased bool
	// Rand draws the number that chooses a priority level when several
	// take load, and the pickers' seeds; nil means math/rand/v2.
	Rand func() uint64

	// LocalityWeighted turns on locality-weighted balancing
	// (common_lb_config.locality_weighted_lb_config): within the chosen
	// level a locality is chosen first, by the weight of its hosts'
	// LocalityWeight scaled by its share of available hosts, then a host
	// within it.
	LocalityWeighted bool
	// FailTrafficOnPanic makes a level in panic answer no host instead of
	// balancing over all its hosts (zone_aware_lb_config
	// fail_traffic_on_panic).
	FailTrafficOnPanic bool
	// Local is the proxy's own locality (node.locality), nil when not
	// configured: a level's hosts in it come first among its localities.
	Local *upstream.Locality
	// Zone turns on zone-aware routing for priority 0; nil for none.
	Zone *ZoneConfig
	// Stats are the lb_* counters; nil counts nothing.
	Stats *Stats

	// subsetOf, for a subset's balancer, are the localities of the
	// levels of the whole host set, which the subset keeps; and
	// localityWeight, when set, overrides a locality's weight
	// (scale_locality_weight).
	subsetOf       []localities
	localityWeight func(level, index int, g *localityGroup) uint32
	// zoneUnchanged: the update that builds the balancer left priority
	// 0 alone, so its zone routing is not counted as recalculated
	// (lb_recalculate_zone_structures and the counts of its checks).
	zoneUnchanged bool
}

// Balancer chooses hosts across priority levels. It is immutable once
// built (only its pickers move), safe for concurrent use, and Pick does
// not allocate.
type Balancer struct {
	levels   []level
	loads    loads
	rand     func() uint64
	hashed   bool // the priority level is chosen by the pick's hash key
	onlyOne  bool // one level takes all the load from one source
	only     int  // that level
	onlyDegr bool // and whether the source is its degraded hosts

	// health and degraded are the levels' availability, from which a
	// retry priority recomputes the load without the levels it excludes.
	health, degraded []uint32

	failOnPanic bool
	// zone is priority 0's zone-aware routing, nil when it does not
	// route by zone.
	zone  *zoneRouting
	stats *Stats
	// built is what of its configuration an update must find unchanged
	// to start from this balancer (see Update).
	built builtWith
}

// level is one priority level: a picker per host source, nil when the
// source is empty.
type level struct {
	all, healthy, degraded Picker
	// state is the level's health, which an update of the set starts
	// from (see Update).
	state levelState
	// locs are the level's localities, with pickers when they are picked
	// from (locality weighting, or zone routing at priority 0).
	locs localities
	// healthyLocs and degradedLocs choose a locality by weight, nil when
	// locality weighting is off or no locality has weight.
	healthyLocs, degradedLocs *localityEDF
}

// New builds the balancer of a cluster whose hosts are given per priority
// (index 0 is the highest priority; a level may be empty). Hosts whose
// configured health fails are kept out of rotation, degraded ones only
// take load the healthy hosts cannot, unless panic mode applies.
func New(priorities [][]*upstream.Host, cfg Config) *Balancer {
	cfg.defaults()
	// Envoy draws one seed per load balancer and shares it among its
	// host sources.
	seed := cfg.Rand()
	b := newBalancer(len(priorities), &cfg)
	counts := make([]levelCounts, len(priorities))
	for i, hosts := range priorities {
		var healthy, degraded []*upstream.Host
		healthy, degraded, counts[i] = splitHealth(hosts, cfg.WeightedPriorityHealth)
		b.levels[i] = level{
			all:      newPicker(cfg.NewPicker, hosts, seed),
			healthy:  newPicker(cfg.NewPicker, healthy, seed),
			degraded: newPicker(cfg.NewPicker, degraded, seed),
			state:    stateOf(counts[i]),
		}
	}
	b.settle(counts, &cfg)
	b.buildLocalities(priorities, counts, &cfg, seed)
	return b
}

// defaults applies the defaults of cfg's unset fields.
func (cfg *Config) defaults() {
	if cfg.OverprovisioningFactor == 0 {
		cfg.OverprovisioningFactor = DefaultOverprovisioningFactor
	}
	cfg.PanicThreshold = min(cfg.PanicThreshold, 100)
	if cfg.NewPicker == nil {
		cfg.NewPicker = NewRoundRobinPicker
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Uint64
	}
}

// newBalancer is a balancer of n levels, without its levels' pickers and
// loads, for cfg with its defaults applied.
func newBalancer(n int, cfg *Config) *Balancer {
	return &Balancer{levels: make([]level, n), rand: cfg.Rand, hashed: cfg.HashBased, failOnPanic: cfg.FailTrafficOnPanic, stats: cfg.Stats, built: builtWithOf(cfg)}
}

// settle computes the loads of levels with counts.
func (b *Balancer) settle(counts []levelCounts, cfg *Config) {
	b.loads = computeLoads(counts, cfg.OverprovisioningFactor, cfg.PanicThreshold)
	b.health, b.degraded = availability(counts, cfg.OverprovisioningFactor)
	b.only, b.onlyDegr, b.onlyOne = soleSource(b.loads)
}

// splitHealth returns the healthy hosts and the degraded ones of a
// level, in its order, and the level's counts. When every host is
// healthy (the usual case) the healthy ones are hosts itself, not a
// copy: a large level's update then builds no second list. Pickers never
// change the hosts they are given. Excluded hosts (Host.Excluded) are
// left out of the counts' total, as Envoy leaves them out of every
// ratio; they are never healthy.
func splitHealth(hosts []*upstream.Host, weighted bool) (healthy, degraded []*upstream.Host, c levelCounts) {
	copied := false
	var excluded []*upstream.Host
	for j, h := range hosts {
		ok, degr := h.Healthy(), false
		if ok {
			degr = h.Degraded()
		}
		if !copied && (!ok || degr) {
			// The first host that is not plainly healthy: the healthy
			// list is a copy from here on.
			copied = true
			healthy = append(make([]*upstream.Host, 0, len(hosts)-1), hosts[:j]...)
		}
		switch {
		case !ok:
			if h.Excluded() {
				excluded = append(excluded, h)
			}
		case degr:
			degraded = append(degraded, h)
		case copied:
			healthy = append(healthy, h)
		}
	}
	if !copied {
		healthy = hosts
	} else if len(healthy) == 0 {
		healthy = nil
	}
	c = levelCounts{total: len(hosts) - len(excluded), healthy: len(healthy), degraded: len(degraded), excluded: len(excluded)}
	if weighted {
		c.weigh(hosts, healthy, degraded)
		c.totalWeight -= sumWeights(excluded)
	}
	return healthy, degraded, c
}

// buildLocalities groups the levels' hosts by locality where picks go by
// locality: every level with locality weighting, priority 0 with zone
// routing (Envoy routes by zone at priority 0 only).
func (b *Balancer) buildLocalities(priorities [][]*upstream.Host, counts []levelCounts, cfg *Config, seed uint64) {
	if !cfg.LocalityWeighted && cfg.Zone == nil {
		return
	}
	for i, hosts := range priorities {
		if !cfg.LocalityWeighted && i > 0 {
			break
		}
		lv := &b.levels[i]
		var order *localities
		if i < len(cfg.subsetOf) {
			order = &cfg.subsetOf[i]
		}
		lv.locs = groupLocalities(hosts, cfg.Local, order)
		for j := range lv.locs.groups {
			g := &lv.locs.groups[j]
			switch {
			case cfg.localityWeight != nil:
				g.weight = cfg.localityWeight(i, j, g)
			case len(g.all) > 0:
				g.weight = g.all[0].LocalityWeight
			}
		}
		if i == 0 && cfg.Zone != nil {
			st := cfg.Stats
			if cfg.zoneUnchanged {
				st = nil
			}
			b.zone = newZoneRouting(cfg.Zone, &lv.locs, counts[0].healthy, cfg.Local, cfg.PanicThreshold, st)
		}
		if cfg.LocalityWeighted {
			lv.healthyLocs = newLocalitySchedule(&lv.locs, false, cfg.OverprovisioningFactor, seed)
			lv.degradedLocs = newLocalitySchedule(&lv.locs, true, cfg.OverprovisioningFactor, seed)
		}
		if cfg.LocalityWeighted || b.zone != nil {
			lv.locs.buildPickers(cfg.NewPicker, seed)
		}
	}
}

// newPicker builds a picker, or nil for an empty list.
func newPicker(f PickerFactory, hosts []*upstream.Host, seed uint64) Picker {
	if len(hosts) == 0 {
		return nil
	}
	return f(hosts, seed)
}

// soleSource finds the common case of one level taking all the load, which
// spares a random draw per pick.
func soleSource(l loads) (level int, degraded, ok bool) {
	for i := range l.healthy {
		switch {
		case l.healthy[i] == 100:
			return i, false, true
		case l.degraded[i] == 100:
			return i, true, true
		}
	}
	return 0, false, false
}

// Pick chooses a host for the pick whose downstream side is ctx (nil for
// none), or returns nil when the chosen level has no host able to take
// the request. panicked reports that the level was in panic mode, so the
// host may be unhealthy (Envoy counts lb_healthy_panic).
func (b *Balancer) Pick(ctx *upstream.PickContext) (h *upstream.Host, panicked bool) {
	if len(b.levels) == 0 {
		return nil, false
	}
	p, degraded := b.only, b.onlyDegr
	switch {
	case ctx != nil && ctx.ForceLevel:
		if ctx.Level < 0 || ctx.Level >= len(b.levels) {
			return nil, false
		}
		p, degraded = ctx.Level, ctx.LevelDegraded
	case ctx != nil && ctx.ExcludedPriorities != nil:
		p, degraded = b.chooseExcluding(b.draw(ctx), ctx.ExcludedPriorities)
	case !b.onlyOne:
		p, degraded = b.choose(b.draw(ctx))
	}
	lv := &b.levels[p]
	var src Picker
	switch {
	case b.loads.panic[p]:
		if b.failOnPanic {
			return nil, true
		}
		src, panicked = lv.all, true
	case lv.healthyLocs != nil && !degraded:
		src = lv.locs.groups[lv.healthyLocs.pick()].healthyPick
	case lv.degradedLocs != nil && degraded:
		src = lv.locs.groups[lv.degradedLocs.pick()].degrPicker
	case p == 0 && b.zone != nil:
		var ok bool
		if src, ok = b.zonePicker(lv, degraded); !ok {
			return nil, false
		}
	case degraded:
		src = lv.degraded
	default:
		src = lv.healthy
	}
	if src == nil {
		return nil, panicked
	}
	return src.Pick(ctx), panicked
}

// draw is the number that chooses the priority level: the pick's hash key
// for hash-based pickers (so that a key keeps its level too), else a
// random one.
func (b *Balancer) draw(ctx *upstream.PickContext) uint64 {
	if b.hashed {
		if h, ok := ctx.RequestHash(); ok {
			return h
		}
	}
	return b.rand()
}

// zonePicker is the host source of a pick at priority 0 with zone-aware
// routing, Envoy's order of checks: the runtime share of picks zone
// routing considers, the local cluster's panic (then fail_traffic_on_panic
// fails the pick: ok is false), then the locality.
func (b *Balancer) zonePicker(lv *level, degraded bool) (src Picker, ok bool) {
	whole := lv.healthy
	if degraded {
		whole = lv.degraded
	}
	z := b.zone
	if !z.routingEnabled(b.rand()) {
		return whole, true
	}
	if z.localPanic {
		b.stats.inc(LocalClusterNotOK)
		if b.failOnPanic {
			return nil, false
		}
		return whole, true
	}
	g := &lv.locs.groups[z.chooseLocality(b.rand, len(lv.locs.groups), b.stats)]
	if degraded {
		return g.degrPicker, true
	}
	return g.healthyPick, true
}

// choose is Envoy's choosePriority: the draw, reduced to 1..100, falls in
// one level's healthy share, or failing that in one level's degraded
// share. Loads that do not add up to 100 (no host at all) fall back to
// P0's healthy hosts.
func (b *Balancer) choose(draw uint64) (priority int, degraded bool) {
	return chooseFrom(b.loads, draw)
}

// chooseFrom is choose over loads l.
func chooseFrom(l loads, draw uint64) (priority int, degraded bool) {
	point := uint32(draw%100) + 1
	var sum uint32
	for i, l := range l.healthy {
		sum += l
		if point <= sum {
			return i, false
		}
	}
	for i, l := range l.degraded {
		sum += l
		if point <= sum {
			return i, true
		}
	}
	return 0, false
}

// Loads reports, per priority level, the percentage of requests sent to
// its healthy hosts and to its degraded hosts, and whether it is in panic:
// the figures the balancer works from, for tests and diagnostics.
func (b *Balancer) Loads() (healthy, degraded []uint32, panic []bool) {
	return append([]uint32(nil), b.loads.healthy...),
		append([]uint32(nil), b.loads.degraded...),
		append([]bool(nil), b.loads.panic...)
}
