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
type http1Pools struct {
	few  []hostPool
	many map[*upstream.Host]*http1Pool
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
				if !yield(h, p) {
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
// ch: ps's map copied whole, the added hosts given pools and the departed
// ones removed, where building the map again would look up and insert
// every host; and the pools of the departed hosts. hosts are the new
// set's: a host of ch.gone that it has all the same (a removed host kept
// while it is healthy) keeps its pool, which costs a look at every host,
// so only when extra says there are such hosts. ps keeps a map.
func (ps *http1Pools) changed(hosts []*upstream.Host, ch *setChange, extra bool) (http1Pools, []*http1Pool) {
	many := maps.Clone(ps.many)
	for _, h := range ch.added {
		many[h] = &http1Pool{}
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
		if p := many[h]; p != nil && !stayed[h] {
			retired = append(retired, p)
			delete(many, h)
		}
	}
	return http1Pools{many: many}, retired
}
