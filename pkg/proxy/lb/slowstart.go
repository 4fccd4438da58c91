package lb

import (
	"math"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Slow start's defaults, Envoy's.
const (
	defaultAggression       = 1.0
	defaultMinWeightPercent = 10
)

// slowStart is a slow_start_config: a host new to the cluster gets a share
// of the traffic that grows over window from min_weight_percent of its
// weight to all of it, faster or slower as aggression is above or below
// 1. Zero window turns it off.
type slowStart struct {
	window     time.Duration
	aggression runtimeDouble
	minWeight  float64 // a fraction of the weight
}

// rampUp is slow start at one host set install: what each pick needs to
// scale the weights of the hosts still in their window.
type rampUp struct {
	window     time.Duration
	aggression float64
	minWeight  float64
	firstSet   time.Time
	// latest is the creation time of the newest host in slow start:
	// past latest+window no host is, and weights are their own again.
	latest time.Time
	clock  func() time.Time
}

// at returns the ramp of hosts at env's install, or nil when none of them
// is in slow start (or slow start is off): their pickers can then ignore
// it, as Envoy's skip the scheduler.
func (s *slowStart) at(env *Env, hosts []*upstream.Host) *rampUp {
	if s == nil || s.window <= 0 {
		return nil
	}
	r := &rampUp{window: s.window, minWeight: s.minWeight, firstSet: env.FirstSet, clock: env.clock()}
	for _, h := range hosts {
		if r.isNew(h) && h.Created.After(r.latest) {
			r.latest = h.Created
		}
	}
	if r.latest.IsZero() || env.Now.Sub(r.latest) > s.window {
		return nil
	}
	r.aggression = s.aggression.value(env.Runtime)
	if !(r.aggression > 0) {
		// Envoy logs the bad runtime value and uses 1.
		r.aggression = defaultAggression
	}
	return r
}

// isNew reports whether h joined the cluster after its first host set.
func (r *rampUp) isNew(h *upstream.Host) bool {
	return !r.firstSet.IsZero() && h.Created.After(r.firstSet)
}

// scale returns weight scaled for h at now, as Envoy's
// applySlowStartFactor: a host within its window gets its share of the
// window elapsed (in whole milliseconds, at least one), to the power
// 1/aggression, and never less than min_weight_percent.
func (r *rampUp) scale(weight float64, h *upstream.Host, now time.Time) float64 {
	if now.Sub(r.latest) > r.window || !r.isNew(h) {
		return weight
	}
	in := now.Sub(h.Created)
	if in >= r.window {
		return weight
	}
	ms := max(in.Milliseconds(), 1)
	factor := float64(ms) / float64(r.window.Milliseconds())
	if r.aggression != 1 {
		factor = math.Pow(factor, 1/r.aggression)
	}
	return weight * max(factor, r.minWeight)
}
