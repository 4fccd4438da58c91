package lb

import (
	"math"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// defaultChoiceCount is least request's choice_count when unset.
const defaultChoiceCount = 2

// leastRequestPolicy is LEAST_REQUEST with its least_request_lb_config.
type leastRequestPolicy struct {
	choices  uint32
	fullScan bool
	bias     runtimeDouble
	// slowStart is nil when slow_start_config is unset.
	slowStart *slowStart
	// locality is the typed policy's locality_lb_config (LocalityOf).
	locality *commonv3.LocalityLbConfig
}

func (leastRequestPolicy) Name() string    { return "LEAST_REQUEST" }
func (leastRequestPolicy) HashBased() bool { return false }

// Pickers reads active_request_bias once per install, as Envoy's refresh
// caches it; a negative or NaN value counts as 1.
func (p leastRequestPolicy) Pickers(env Env) PickerFactory {
	bias := p.bias.value(env.Runtime)
	if !validWeightFactor(bias) {
		bias = 1
	}
	rnd := env.rand()
	return func(hosts []*upstream.Host, seed uint64) Picker {
		ramp := p.slowStart.at(&env, hosts)
		if ramp == nil && equalWeights(hosts) {
			return &leastRequest{hosts: hosts, choices: p.choices, fullScan: p.fullScan, rand: rnd, slow: p.slowStart != nil}
		}
		return newWeightedLeastRequest(hosts, seed, bias, ramp)
	}
}

// leastRequest is Envoy's least request over hosts of equal weight: the
// host with the fewest active requests among choices random ones (P2C by
// default), or among all of them with a full scan, ties then broken at
// random.
type leastRequest struct {
	hosts    []*upstream.Host
	choices  uint32
	fullScan bool
	rand     func() uint64
	// slow: the policy has slow start, which a host an update adds may
	// be in (then the weighted picker takes over, see withHosts).
	slow bool
}

// Pick chooses the least busy of the sampled hosts; a later sample
// replaces the candidate only when it has strictly fewer active requests.
func (p *leastRequest) Pick(*upstream.PickContext) *upstream.Host {
	if p.fullScan {
		return p.scan()
	}
	n := uint64(len(p.hosts))
	best := p.hosts[p.rand()%n]
	least := best.Stats.RqActive.Load()
	for range p.choices - 1 {
		h := p.hosts[p.rand()%n]
		if a := h.Stats.RqActive.Load(); a < least {
			best, least = h, a
		}
	}
	return best
}

// scan is the FULL_SCAN selection: every host is compared, and among the
// hosts tied for the fewest active requests each has the same chance
// (reservoir sampling, as Envoy's).
func (p *leastRequest) scan() *upstream.Host {
	best := p.hosts[0]
	least := best.Stats.RqActive.Load()
	tied := uint64(1)
	for _, h := range p.hosts[1:] {
		switch a := h.Stats.RqActive.Load(); {
		case a < least:
			best, least, tied = h, a, 1
		case a == least:
			tied++
			if p.rand()%tied == 0 {
				best = h
			}
		}
	}
	return best
}

// weightedLeastRequest is least request over hosts of different weights
// (or some in slow start): the weighted round robin schedule, each host
// queued again with its weight divided by (active requests + 1) to the
// power active_request_bias, so that busy hosts come round less often.
type weightedLeastRequest struct {
	edf *edf
}

func newWeightedLeastRequest(hosts []*upstream.Host, seed uint64, bias float64, ramp *rampUp) *weightedLeastRequest {
	weigh := func(h *upstream.Host) float64 {
		w := float64(hostWeight(h))
		active := float64(h.Stats.RqActive.Load()) + 1
		switch bias {
		case 0:
		case 1:
			w /= active
		default:
			w /= math.Pow(active, bias)
		}
		if ramp != nil {
			w = ramp.scale(w, h, ramp.clock())
		}
		return w
	}
	p := &weightedLeastRequest{edf: newEDF(hosts, weigh)}
	p.edf.advance(hosts, seed)
	return p
}

// Pick returns the host due first.
func (p *weightedLeastRequest) Pick(*upstream.PickContext) *upstream.Host {
	return p.edf.pick()
}
