package lb

// chooseExcluding is choose under a retry priority (Envoy's
// previous_priorities): the levels excluded are given no availability,
// the load is spread again over the others by their availability,
// healthy before degraded, highest priority first, the rounding going
// round again from the first level; when no level is left available the
// cluster's own load applies. It allocates, which only retries pay.
func (b *Balancer) chooseExcluding(draw uint64, excluded []bool) (priority int, degraded bool) {
	if p, d, ok := chooseWithout(draw, b.health, b.degraded, excluded); ok {
		return p, d
	}
	return b.choose(draw)
}

// chooseWithout is the choice of chooseExcluding from the levels'
// availability; ok is false when no level is left available.
func chooseWithout(draw uint64, availHealth, availDegraded []uint32, excluded []bool) (priority int, degraded, ok bool) {
	n := len(availHealth)
	health := make([]uint32, n)
	degr := make([]uint32, n)
	var total uint32
	for i := range n {
		if i < len(excluded) && excluded[i] {
			continue
		}
		health[i], degr[i] = availHealth[i], availDegraded[i]
		total += health[i] + degr[i]
	}
	total = min(total, 100)
	if total == 0 {
		return 0, false, false
	}
	healthLoad := make([]uint32, n)
	degrLoad := make([]uint32, n)
	// Every pass hands at least 1 to each available level, so the loop
	// ends.
	for left := uint32(100); left != 0; {
		for i, a := range health {
			d := min(left, a*100/total)
			healthLoad[i] += d
			left -= d
		}
		for i, a := range degr {
			d := min(left, a*100/total)
			degrLoad[i] += d
			left -= d
		}
	}
	point := uint32(draw%100) + 1
	var sum uint32
	for i, l := range healthLoad {
		if sum += l; point <= sum {
			return i, false, true
		}
	}
	for i, l := range degrLoad {
		if sum += l; point <= sum {
			return i, true, true
		}
	}
	return 0, false, true
}
