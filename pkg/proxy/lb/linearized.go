package lb

// LevelHosts are the host counts of one priority level of a linearized
// priority set (an aggregate cluster's: the levels of the clusters it
// lists, one after the other), with the overprovisioning factor of the
// cluster the level comes from.
type LevelHosts struct {
	Total, Healthy, Degraded int
	// OverprovisioningFactor in percent; 0 means
	// DefaultOverprovisioningFactor.
	OverprovisioningFactor uint32
	// Weighted (the cluster's weighted_priority_health): the level's
	// availability is the share of its hosts' weights, the sums below.
	Weighted                                   bool
	TotalWeight, HealthyWeight, DegradedWeight uint64
}

// PriorityLoad is Envoy's per-priority load over a linearized priority
// set, the aggregate cluster's first tier: which level (and whether its
// healthy or its degraded hosts) takes a request. It is immutable and
// safe for concurrent use.
type PriorityLoad struct {
	loads            loads
	health, degraded []uint32
}

// NewPriorityLoad computes the load of the levels, each level's
// availability scaled by its own overprovisioning factor, with panic
// threshold panicThreshold (percent; only the case where every level is
// in panic changes the load, which then follows the levels' host
// counts).
func NewPriorityLoad(levels []LevelHosts, panicThreshold uint32) *PriorityLoad {
	counts := make([]levelCounts, len(levels))
	health := make([]uint32, len(levels))
	degraded := make([]uint32, len(levels))
	for i, l := range levels {
		counts[i] = levelCounts{total: l.Total, healthy: l.Healthy, degraded: l.Degraded,
			weighted: l.Weighted, totalWeight: l.TotalWeight, healthyWeight: l.HealthyWeight, degradedWeight: l.DegradedWeight}
		factor := l.OverprovisioningFactor
		if factor == 0 {
			factor = DefaultOverprovisioningFactor
		}
		h, d := availability(counts[i:i+1], factor)
		health[i], degraded[i] = h[0], d[0]
	}
	return &PriorityLoad{
		loads:  loadsFrom(counts, health, degraded, min(panicThreshold, 100)),
		health: health, degraded: degraded,
	}
}

// Choose picks a level for draw (a random number), leaving out the
// levels excluded marks (a retry's previous_priorities; nil for none):
// the others share the load by their availability, and when none is left
// the whole load applies. It returns -1 when there is no level.
func (p *PriorityLoad) Choose(draw uint64, excluded []bool) (level int, degraded bool) {
	if len(p.health) == 0 {
		return -1, false
	}
	if excluded != nil {
		if l, d, ok := chooseWithout(draw, p.health, p.degraded, excluded); ok {
			return l, d
		}
	}
	return chooseFrom(p.loads, draw)
}

// Loads reports the percentage of requests each level takes on its
// healthy and on its degraded hosts, for tests and diagnostics.
func (p *PriorityLoad) Loads() (healthy, degraded []uint32) {
	return append([]uint32(nil), p.loads.healthy...), append([]uint32(nil), p.loads.degraded...)
}
