package lb

import (
	"math"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// edf is Envoy's earliest-deadline-first scheduler: each host is due again
// 1/weight after its last pick, and the host with the earliest deadline is
// picked next, ties going to the host queued first. Over any stretch of
// picks each host gets a share proportional to its weight, spread evenly
// rather than in bursts. Deadlines are float64 and accumulate exactly as
// Envoy's doubles do, so sequences match Envoy's pick for pick.
type edf struct {
	mu    sync.Mutex
	order uint64 // queue position of the next entry, for ties
	heap  []edfEntry
	// weigh, when not nil, gives a host's weight each time it is queued
	// again, as Envoy's pickAndAdd asks calculate_weight: least request's
	// weights follow the active requests, slow start's the time. Nil
	// keeps each entry's step.
	weigh func(*upstream.Host) float64
}

// edfEntry is one host waiting in the scheduler.
type edfEntry struct {
	deadline float64
	order    uint64
	step     float64 // 1/weight, computed once as Envoy does per add
	host     *upstream.Host
}

// newEDF queues every host at 1/weight, in list order: the configured
// weight, or weigh's when not nil.
func newEDF(hosts []*upstream.Host, weigh func(*upstream.Host) float64) *edf {
	e := &edf{heap: make([]edfEntry, 0, len(hosts)), weigh: weigh}
	for _, h := range hosts {
		step := 1.0 / float64(hostWeight(h))
		if weigh != nil {
			step = 1.0 / positive(weigh(h))
		}
		e.heap = append(e.heap, edfEntry{deadline: step, order: e.order, step: step, host: h})
		e.order++
		e.up(len(e.heap) - 1)
	}
	return e
}

// advance picks seed modulo one full cycle (the sum of the hosts'
// weights) times, which starts the schedule at a seed-chosen point of its
// cycle, as Envoy's pre-picks do.
func (e *edf) advance(hosts []*upstream.Host, seed uint64) {
	var cycle uint64
	for _, h := range hosts {
		cycle += uint64(hostWeight(h))
	}
	for range seed % cycle {
		e.pick()
	}
}

// pick returns the host with the earliest deadline and queues it again
// one step later. Replacing the top and sifting it down yields the same
// sequence as Envoy's pop and push: every entry's key is unique, so the
// heap's shape never decides which entry comes first.
func (e *edf) pick() *upstream.Host {
	e.mu.Lock()
	top := &e.heap[0]
	h := top.host
	// Envoy's scheduler time becomes this deadline, and the host is due
	// again one step after it.
	if e.weigh != nil {
		top.step = 1.0 / positive(e.weigh(h))
	}
	top.deadline += top.step
	top.order = e.order
	e.order++
	e.down(0)
	e.mu.Unlock()
	return h
}

// The heap is 4-ary (the children of i are 4i+1 to 4i+4): half the
// depth of a binary heap, with a node's children side by side in memory,
// which roughly halves the work of a pick among 1,000 hosts.
const edfArity = 4

// before orders entries by deadline, then by queue position.
func before(a, b *edfEntry) bool {
	return a.deadline < b.deadline || (a.deadline == b.deadline && a.order < b.order)
}

// up moves the entry at i towards the top to its place.
func (e *edf) up(i int) {
	h := e.heap
	x := h[i]
	for i > 0 {
		parent := (i - 1) / edfArity
		if !before(&x, &h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = x
}

// down moves the entry at i towards the bottom to its place, moving each
// smaller child up into the hole rather than swapping.
func (e *edf) down(i int) {
	h := e.heap
	n := len(h)
	x := h[i]
	for {
		first := edfArity*i + 1
		if first >= n {
			break
		}
		best := first
		for j := first + 1; j < min(first+edfArity, n); j++ {
			if before(&h[j], &h[best]) {
				best = j
			}
		}
		if !before(&h[best], &x) {
			break
		}
		h[i] = h[best]
		i = best
	}
	h[i] = x
}

// positive keeps a computed weight usable: Envoy requires weights above
// zero, and a zero, negative or NaN one (a runtime value gone wrong) would
// take the host out of the schedule for good.
func positive(w float64) float64 {
	switch {
	case w > math.MaxFloat64:
		return math.MaxFloat64
	case w > 0:
		return w
	default:
		return minWeight
	}
}

// minWeight stands in for a weight that is not above zero: the host comes
// round again only after every other host has had about 1e300 picks.
const minWeight = 1e-300

// hostWeight is the weight the balancers use: the configured one, and 1
// for a host built without weight.
func hostWeight(h *upstream.Host) uint32 {
	if h.Weight == 0 {
		return 1
	}
	return h.Weight
}
