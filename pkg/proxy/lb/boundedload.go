package lb

import (
	"math"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// hashTable is a consistent-hash table (Ring or Maglev): the host a hash
// goes to.
type hashTable interface {
	at(h uint64) *upstream.Host
}

// boundedLoad is consistent hashing with bounded loads (hash_balance_factor),
// as Envoy implements it: a host may have at most factor/100 times its
// share (by weight) of the cluster's active requests, plus one; a request
// whose host is over it probes the other hosts in a pseudo-random order
// seeded by its hash (the same hash, the same order) and takes the first
// one within its bound, or the least loaded of all.
type boundedLoad struct {
	table  hashTable
	hosts  []*upstream.Host
	weight []float64 // each host's share of the weights
	// of maps a host to its index in hosts.
	of     map[*upstream.Host]int
	factor uint64
	// active is the cluster's upstream_rq_active; nil counts the active
	// requests of the hosts of this table.
	active *stats.Gauge
	rand   func() uint64
	// scratch holds the probe state of overloaded picks: the generator's
	// 2.5 KB of state and the permutation are not allocated per pick.
	scratch sync.Pool
}

// probe is one overloaded pick's state.
type probe struct {
	mt  mt19937
	idx []uint32
}

func newBoundedLoad(table hashTable, hosts []*upstream.Host, factor uint32, active *stats.Gauge, rand func() uint64) *boundedLoad {
	var sum uint64
	for _, h := range hosts {
		sum += uint64(hostWeight(h))
	}
	b := &boundedLoad{table: table, hosts: hosts, weight: make([]float64, len(hosts)),
		of: make(map[*upstream.Host]int, len(hosts)), factor: uint64(factor), active: active, rand: rand}
	for i, h := range hosts {
		b.weight[i] = float64(hostWeight(h)) / float64(sum)
		b.of[h] = i
	}
	b.scratch.New = func() any { return &probe{idx: make([]uint32, len(hosts))} }
	return b
}

// Pick implements Picker.
func (b *boundedLoad) Pick(ctx *upstream.PickContext) *upstream.Host {
	h := hashOrRandom(ctx, b.rand)
	first := b.table.at(h)
	overall := b.overall()
	load := b.overload(first, b.weight[b.of[first]], overall)
	if load <= 1 {
		return first
	}
	p := b.scratch.Get().(*probe)
	defer b.scratch.Put(p)
	n := uint32(len(b.hosts))
	for i := range p.idx {
		p.idx[i] = uint32(i)
	}
	p.mt.seed(h)
	best, bestLoad := first, load
	for i := range n {
		j := p.mt.below(n - i)
		p.idx[i], p.idx[i+j] = p.idx[i+j], p.idx[i]
		k := p.idx[i]
		alt := b.hosts[k]
		if alt == first {
			continue
		}
		l := b.overload(alt, b.weight[k], overall)
		if l <= 1 {
			return alt
		}
		if l < bestLoad {
			best, bestLoad = alt, l
		}
	}
	return best
}

// overall is the cluster's active requests.
func (b *boundedLoad) overall() uint64 {
	if b.active != nil {
		return uint64(max(b.active.Value(), 0))
	}
	var n int64
	for _, h := range b.hosts {
		n += h.Stats.RqActive.Load()
	}
	return uint64(max(n, 0))
}

// overload is a host's active requests over its bound: its weight's share
// of factor% of the cluster's active requests plus one, rounded up, at
// least 1. Above 1 the host is over its bound.
func (b *boundedLoad) overload(h *upstream.Host, weight float64, overall uint64) float64 {
	total := uint32(((overall+1)*b.factor + 99) / 100)
	slots := max(uint32(math.Ceil(float64(total)*weight)), 1)
	return float64(h.Stats.RqActive.Load()) / float64(slots)
}
