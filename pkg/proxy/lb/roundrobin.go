package lb

import (
	"sync/atomic"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// RoundRobin is Envoy's ROUND_ROBIN policy over one host list. With equal
// weights it cycles through the list with an atomic counter (no lock).
// With different weights it uses the earliest-deadline-first scheduler:
// weights 1, 2 and 3 give the repeating sequence C B C A B C, each host in
// proportion to its weight and interleaved.
type RoundRobin struct {
	hosts []*upstream.Host
	next  atomic.Uint64
	edf   *edf // nil when every weight is equal
	// plain: built without slow start, so that an update of its hosts
	// can carry on from it (see withHosts).
	plain bool
}

// NewRoundRobin builds the round robin of hosts (non-empty). The seed
// chooses where the cycle starts, like Envoy's random start: seed 0 starts
// with the first host, or at the start of the weighted schedule.
func NewRoundRobin(hosts []*upstream.Host, seed uint64) *RoundRobin {
	rr := newRoundRobin(hosts, seed, nil)
	rr.plain = true
	return rr
}

// newRoundRobin is NewRoundRobin with the hosts' slow start (nil for
// none): while a host is in its window the weighted schedule runs, its
// weights scaled at each pick, as Envoy's EDF balancer does whenever a
// host is in slow start.
func newRoundRobin(hosts []*upstream.Host, seed uint64, ramp *rampUp) *RoundRobin {
	rr := &RoundRobin{hosts: hosts}
	rr.next.Store(seed)
	if len(hosts) <= 1 || (ramp == nil && equalWeights(hosts)) {
		return rr
	}
	var weigh func(*upstream.Host) float64
	if ramp != nil {
		weigh = func(h *upstream.Host) float64 {
			return ramp.scale(float64(hostWeight(h)), h, ramp.clock())
		}
	}
	rr.edf = newEDF(hosts, weigh)
	rr.edf.advance(hosts, seed)
	return rr
}

// NewRoundRobinPicker is NewRoundRobin as a PickerFactory.
func NewRoundRobinPicker(hosts []*upstream.Host, seed uint64) Picker {
	return NewRoundRobin(hosts, seed)
}

// roundRobinPolicy is ROUND_ROBIN with its round_robin_lb_config.
type roundRobinPolicy struct {
	slowStart *slowStart
	// locality is the typed policy's locality_lb_config (LocalityOf).
	locality *commonv3.LocalityLbConfig
}

func (roundRobinPolicy) Name() string    { return "ROUND_ROBIN" }
func (roundRobinPolicy) HashBased() bool { return false }

func (p roundRobinPolicy) Pickers(env Env) PickerFactory {
	if p.slowStart == nil {
		return NewRoundRobinPicker
	}
	return func(hosts []*upstream.Host, seed uint64) Picker {
		return newRoundRobin(hosts, seed, p.slowStart.at(&env, hosts))
	}
}

// Pick returns the next host of the cycle; round robin reads nothing of
// ctx.
func (rr *RoundRobin) Pick(*upstream.PickContext) *upstream.Host {
	if rr.edf != nil {
		return rr.edf.pick()
	}
	i := rr.next.Add(1) - 1
	return rr.hosts[i%uint64(len(rr.hosts))]
}

// equalWeights reports whether every host has the same weight, in which
// case Envoy skips the scheduler: plain round robin gives the same shares
// with less work.
func equalWeights(hosts []*upstream.Host) bool {
	w := hostWeight(hosts[0])
	for _, h := range hosts[1:] {
		if hostWeight(h) != w {
			return false
		}
	}
	return true
}
