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

// changed returns the pools of hosts, a set that replaces ps's when only
// the hosts of gone may have left it (all others of ps's hosts are in
// hosts), and the pools of those that did leave: ps's map copied whole,
// the new hosts given pools and the departed ones removed, where building
// the map again would look up and insert every host. ps keeps a map.
func (ps *http1Pools) changed(hosts, gone []*upstream.Host) (http1Pools, []*http1Pool) {
	many := maps.Clone(ps.many)
	// stayed tells which of gone are in hosts all the same (a removed
	// host kept while it is healthy).
	var stayed map[*upstream.Host]bool
	if len(gone) > 0 {
		stayed = make(map[*upstream.Host]bool, len(gone))
		for _, h := range gone {
			stayed[h] = false
		}
	}
	for _, h := range hosts {
		if _, ok := many[h]; !ok {
			many[h] = &http1Pool{}
		} else if stayed != nil {
			if _, ok := stayed[h]; ok {
				stayed[h] = true
			}
		}
	}
	var retired []*http1Pool
	for _, h := range gone {
		if p := many[h]; p != nil && !stayed[h] {
			retired = append(retired, p)
			delete(many, h)
		}
	}
	return http1Pools{many: many}, retired
}
