package lb

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// levelCounts are the host counts of one priority level that decide its
// share of the load.
type levelCounts struct {
	total    int // the level's hosts but the excluded ones
	healthy  int
	degraded int
	excluded int // hosts left out of total (upstream.Host.Excluded)
	// weighted (weighted_priority_health) makes the level's availability
	// the share of its hosts' weights, the sums below, rather than of
	// its host counts; panic still counts hosts, as Envoy's does.
	weighted                                   bool
	totalWeight, healthyWeight, degradedWeight uint64
}

// loads is how the traffic is spread over priority levels: the percentage
// of requests each level takes on its healthy hosts and on its degraded
// hosts (together 100), and the levels in panic, which balance over all
// their hosts whatever their health.
type loads struct {
	healthy  []uint32
	degraded []uint32
	panic    []bool
}

// computeLoads is Envoy's LoadBalancerBase recalculation: each level's
// availability is its share of healthy (and of degraded) hosts scaled by
// the overprovisioning factor and capped at 100; the load goes to the
// highest priorities first as far as their availability goes, healthy
// before degraded, and spills over to lower priorities. A level whose
// healthy and degraded hosts fall below panicThreshold percent is in
// panic unless the levels together are fully available; when every level
// is in panic, the load follows the levels' host counts.
func computeLoads(levels []levelCounts, overprovisioning, panicThreshold uint32) loads {
	health, degraded := availability(levels, overprovisioning)
	return loadsFrom(levels, health, degraded, panicThreshold)
}

// loadsFrom is computeLoads from the levels' availability, however it
// was scaled.
func loadsFrom(levels []levelCounts, health, degraded []uint32, panicThreshold uint32) loads {
	n := len(levels)
	l := loads{healthy: make([]uint32, n), degraded: make([]uint32, n), panic: make([]bool, n)}
	if n == 0 {
		return l
	}
	var sum uint32
	for i := range levels {
		sum += health[i] + degraded[i]
	}
	normalized := min(100, sum)

	if normalized > 0 {
		firstHealthy, rest := distribute(l.healthy, health, 100, normalized)
		firstDegraded, rest := distribute(l.degraded, degraded, rest, normalized)
		// What remains is rounding; it goes to the first available level.
		if rest != 0 {
			if firstHealthy >= 0 {
				l.healthy[firstHealthy] += rest
			} else {
				l.degraded[firstDegraded] += rest
			}
		}
	}

	if panicThreshold == 0 && normalized == 0 {
		// No host can take traffic and panic is off: the load must still
		// add up to 100, so P0 gets it and finds no host.
		l.healthy[0] = 100
		return l
	}
	totalPanic := true
	for i, c := range levels {
		l.panic[i] = normalized != 100 && inPanic(c, panicThreshold)
		totalPanic = totalPanic && l.panic[i]
	}
	if totalPanic {
		loadInTotalPanic(l, levels)
	}
	return l
}

// availability is each level's share of healthy and of degraded hosts
// (of their weights for a weighted level), scaled by the
// overprovisioning factor and capped at 100 (Envoy's per-priority health
// and degraded figures).
func availability(levels []levelCounts, overprovisioning uint32) (health, degraded []uint32) {
	health = make([]uint32, len(levels))
	degraded = make([]uint32, len(levels))
	for i, c := range levels {
		if c.total == 0 {
			continue
		}
		ok, degr, all := uint64(c.healthy), uint64(c.degraded), uint64(c.total)
		if c.weighted {
			ok, degr, all = c.healthyWeight, c.degradedWeight, c.totalWeight
		}
		if all > 0 {
			health[i] = uint32(min(100, uint64(overprovisioning)*ok/all))
			degraded[i] = uint32(min(100, uint64(overprovisioning)*degr/all))
		}
	}
	return health, degraded
}

// weigh sets a level's weight sums from its hosts and its healthy and
// degraded ones, for weighted_priority_health.
func (c *levelCounts) weigh(all, healthy, degraded []*upstream.Host) {
	c.weighted = true
	c.totalWeight, c.healthyWeight, c.degradedWeight = sumWeights(all), sumWeights(healthy), sumWeights(degraded)
}

// sumWeights adds up the hosts' load_balancing_weight.
func sumWeights(hosts []*upstream.Host) uint64 {
	var w uint64
	for _, h := range hosts {
		w += uint64(h.Weight)
	}
	return w
}

// distribute gives each level its availability's share of total, highest
// priority first, until total runs out. It returns the first level with
// any availability (-1 when none) and the load left over.
func distribute(load, availability []uint32, total, normalized uint32) (first int, rest uint32) {
	first = -1
	for i, a := range availability {
		if first < 0 && a > 0 {
			first = i
		}
		load[i] = min(total, a*100/normalized)
		total -= load[i]
	}
	return first, total
}

// inPanic reports whether too few hosts of a level can take traffic: the
// percentage of healthy and degraded hosts is below the threshold. An
// empty level is in panic.
func inPanic(c levelCounts, threshold uint32) bool {
	if c.total == 0 {
		return true
	}
	healthy := 100 * float64(c.healthy) / float64(c.total)
	degraded := 100 * float64(c.degraded) / float64(c.total)
	return healthy+degraded < float64(threshold)
}

// loadInTotalPanic spreads the load by the number of hosts of each level,
// whatever their health (excluded ones too, as Envoy counts every host
// here), the rounding going to the first non-empty level.
func loadInTotalPanic(l loads, levels []levelCounts) {
	var hosts int
	for _, c := range levels {
		hosts += c.total + c.excluded
	}
	for i := range l.degraded {
		l.degraded[i] = 0
	}
	if hosts == 0 {
		// No host anywhere; the load must go somewhere.
		l.healthy[0] = 100
		return
	}
	total := uint32(100)
	first := -1
	for i, c := range levels {
		n := c.total + c.excluded
		if first < 0 && n > 0 {
			first = i
		}
		l.healthy[i] = uint32(100 * n / hosts)
		total -= l.healthy[i]
	}
	l.healthy[first] += total
}
