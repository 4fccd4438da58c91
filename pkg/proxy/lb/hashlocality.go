package lb

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// localityWeights are Envoy's normalized host weights of a ring hash or
// maglev balancer with locality_weighted_lb_config: a host's weight is
// its share of its locality's host weights times its locality's share of
// the localities' weights, so that a locality takes the hashes in
// proportion to its load_balancing_weight. A locality of weight 0 takes
// none: its hosts are left out of the returned list. The localities are
// those of hosts (Envoy sums the weights of the level's localities, those
// without a host in the list included; see docs/compat.md).
func localityWeights(hosts []*upstream.Host) ([]*upstream.Host, []float64) {
	locSum := map[upstream.Locality]uint64{}
	hostSum := map[upstream.Locality]uint64{}
	var total uint64
	for _, h := range hosts {
		if _, seen := locSum[h.Locality]; !seen {
			locSum[h.Locality] = uint64(h.LocalityWeight)
			total += uint64(h.LocalityWeight)
		}
		hostSum[h.Locality] += uint64(hostWeight(h))
	}
	if total == 0 {
		// Every locality of weight 0: Envoy's ring or table is empty.
		return nil, nil
	}
	kept := make([]*upstream.Host, 0, len(hosts))
	weights := make([]float64, 0, len(hosts))
	for _, h := range hosts {
		lw := locSum[h.Locality]
		if lw == 0 {
			continue
		}
		kept = append(kept, h)
		weights = append(weights, float64(hostWeight(h))/float64(hostSum[h.Locality])*float64(lw)/float64(total))
	}
	return kept, weights
}

// hostWeights are the hosts' load_balancing_weight and their sum, the
// weights of a ring or table without locality weighting (a host's
// normalized weight is its weight over the sum; the division is left to
// the ring, which divides last, as its points have always been counted).
func hostWeights(hosts []*upstream.Host) ([]float64, float64) {
	var sum uint64
	out := make([]float64, len(hosts))
	for i, h := range hosts {
		out[i] = float64(hostWeight(h))
		sum += uint64(hostWeight(h))
	}
	return out, float64(sum)
}

// hashWeights are the hosts a ring or table is built over, their weights
// and the weights' sum (a host's normalized weight is its weight over the
// sum), locality-weighted when localityWeighted.
func hashWeights(hosts []*upstream.Host, localityWeighted bool) ([]*upstream.Host, []float64, float64) {
	if localityWeighted {
		kept, w := localityWeights(hosts)
		return kept, w, 1
	}
	w, sum := hostWeights(hosts)
	return hosts, w, sum
}

// WithLocalityWeights returns a ring hash or maglev policy that folds the
// locality weights into its ring or table (the cluster's
// common_lb_config.locality_weighted_lb_config with lb_policy RING_HASH
// or MAGLEV); other policies are returned as they are.
func WithLocalityWeights(p Policy) Policy {
	switch q := p.(type) {
	case ringHashPolicy:
		q.localityWeighted = true
		return q
	case maglevPolicy:
		q.localityWeighted = true
		return q
	}
	return p
}

// FoldsLocalityWeights reports whether p is a ring hash or maglev policy
// that folds the locality weights into its ring or table.
func FoldsLocalityWeights(p Policy) bool {
	switch q := p.(type) {
	case ringHashPolicy:
		return q.localityWeighted
	case maglevPolicy:
		return q.localityWeighted
	}
	return false
}
