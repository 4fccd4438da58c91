package cluster

import (
	"iter"
	"maps"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// maxListedPools is the largest host set whose HTTP/1.1 pools are kept in
// a list rather than a map.
const maxListedPools = 8

// http1Pools are a host set's HTTP/1.1 pools, one per host. A small set
// keeps them in a list: a map of one entry took some two hundred bytes
// of every cluster of a large discovered set, and comparing a few
// pointers is as quick as a map lookup. A larger set keeps a map. The
// zero value has no pool.
//
// A set made from the one before by a change (changed) shares that set's
// map, never written once published, and keeps what the change did in a
// small map of its own (delta): a one-endpoint update of 10,000 hosts
// copied the whole map. The delta is folded into a new map once it
// passes an eighth of the shared one, so that a lookup stays two map
// reads at most and each change costs a constant share of a copy.
type http1Pools struct {
	few  []hostPool
	many map[*upstream.Host]*http1Pool
	// delta is what changed since many: a host's pool, or nil for a host
	// no longer in the set. nil when nothing changed.
	delta map[*upstream.Host]*http1Pool
}

// hostPool is one host's pool in a small set.
type hostPool struct {
	host *upstream.Host
	pool *http1Pool
}

// newHTTP1Pools makes room for n hosts' pools.
func newHTTP1Pools(n int) http1Pools {
	if n > maxListedPools {
		return http1Pools{many: make(map[*upstream.Host]*http1Pool, n)}
	}
	return http1Pools{few: make([]hostPool, 0, n)}
}

// get returns h's pool, nil when h has none.
func (ps *http1Pools) get(h *upstream.Host) *http1Pool {
	if ps.many != nil {
		if p, ok := ps.delta[h]; ok {
			return p
		}
		return ps.many[h]
	}
	for i := range ps.few {
		if ps.few[i].host == h {
			return ps.few[i].pool
		}
	}
	return nil
}

// put makes p h's pool.
func (ps *http1Pools) put(h *upstream.Host, p *http1Pool) {
	if ps.delta != nil {
		// A set made by changed shares many: a map of its own first.
		ps.many, ps.delta = ps.merged(), nil
	}
	if ps.many != nil {
		ps.many[h] = p
		return
	}
	for i := range ps.few {
		if ps.few[i].host == h {
			ps.few[i].pool = p
			return
		}
	}
	ps.few = append(ps.few, hostPool{host: h, pool: p})
}

// all yields every host's pool.
func (ps *http1Pools) all() iter.Seq2[*upstream.Host, *http1Pool] {
	return func(yield func(*upstream.Host, *http1Pool) bool) {
		if ps.many != nil {
			for h, p := range ps.many {
				if _, changed := ps.delta[h]; changed {
					continue
				}
				if !yield(h, p) {
					return
				}
			}
			for h, p := range ps.delta {
				if p != nil && !yield(h, p) {
					return
				}
			}
			return
		}
		for _, hp := range ps.few {
			if !yield(hp.host, hp.pool) {
				return
			}
		}
	}
}

// changed returns the pools of a set that replaces ps's by the change
// ch: ps's map shared, the added hosts given pools and the departed ones
// removed in the delta over it (see http1Pools), where building the map
// again would look up and insert every host; and the pools of the
// departed hosts. hosts are the new
// set's: a host of ch.gone that it has all the same (a removed host kept
// while it is healthy) keeps its pool, which costs a look at every host,
// so only when extra says there are such hosts. ps keeps a map.
func (ps *http1Pools) changed(hosts []*upstream.Host, ch *setChange, extra bool) (http1Pools, []*http1Pool) {
	delta := make(map[*upstream.Host]*http1Pool, len(ps.delta)+len(ch.added)+len(ch.gone))
	maps.Copy(delta, ps.delta)
	for _, h := range ch.added {
		delta[h] = &http1Pool{}
	}
	var stayed map[*upstream.Host]bool
	if extra && len(ch.gone) > 0 {
		stayed = make(map[*upstream.Host]bool, len(ch.gone))
		for _, h := range ch.gone {
			stayed[h] = false
		}
		for _, h := range hosts {
			if _, ok := stayed[h]; ok {
				stayed[h] = true
			}
		}
	}
	var retired []*http1Pool
	for _, h := range ch.gone {
		if p := ps.get(h); p != nil && !stayed[h] {
			retired = append(retired, p)
			if _, shared := ps.many[h]; shared {
				delta[h] = nil
			} else {
				delete(delta, h)
			}
		}
	}
	out := http1Pools{many: ps.many, delta: delta}
	if len(delta) > len(ps.many)/8 {
		out = http1Pools{many: out.merged()}
	}
	return out, retired
}

// merged is a new map of the set's pools: many with delta applied.
func (ps *http1Pools) merged() map[*upstream.Host]*http1Pool {
	many := maps.Clone(ps.many)
	for h, p := range ps.delta {
		if p == nil {
			delete(many, h)
		} else {
			many[h] = p
		}
	}
	return many
}
