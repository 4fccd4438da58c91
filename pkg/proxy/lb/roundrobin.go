package lb

import (
	"sync/atomic"

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
}

// NewRoundRobin builds the round robin of hosts (non-empty). The seed
// chooses where the cycle starts, like Envoy's random start: seed 0 starts
// with the first host, or at the start of the weighted schedule.
func NewRoundRobin(hosts []*upstream.Host, seed uint64) *RoundRobin {
	rr := &RoundRobin{hosts: hosts}
	rr.next.Store(seed)
	if len(hosts) <= 1 || equalWeights(hosts) {
		return rr
	}
	rr.edf = newEDF(hosts)
	// Advancing the schedule by seed modulo one full cycle starts it at a
	// seed-chosen point of the cycle, as Envoy's pre-picks do.
	var cycle uint64
	for _, h := range hosts {
		cycle += uint64(hostWeight(h))
	}
	for range seed % cycle {
		rr.edf.pick()
	}
	return rr
}

// NewRoundRobinPicker is NewRoundRobin as a PickerFactory.
func NewRoundRobinPicker(hosts []*upstream.Host, seed uint64) Picker {
	return NewRoundRobin(hosts, seed)
}

// Pick returns the next host of the cycle; round robin ignores ctx.
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
