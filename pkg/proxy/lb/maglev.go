package lb

import (
	"cmp"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// DefaultMaglevTableSize is maglev's table size when unset (the prime the
// Maglev paper recommends, Envoy's default).
const DefaultMaglevTableSize = 65537

// maglevPolicy is MAGLEV with its maglev_lb_config (or the typed Maglev).
type maglevPolicy struct {
	tableSize   uint64
	useHostname bool
	// balanceFactor is hash_balance_factor, 0 when unset: bounded loads.
	balanceFactor uint32
	// localityWeighted folds the locality weights into the table
	// (locality_weighted_lb_config).
	localityWeighted bool
	// hashPolicy is the typed policy's consistent_hashing_lb_config.hash_policy,
	// nil when unset: see HashPolicyOf.
	hashPolicy *router.HashPolicy
}

func (maglevPolicy) Name() string    { return "MAGLEV" }
func (maglevPolicy) HashBased() bool { return true }

func (p maglevPolicy) Pickers(env Env) PickerFactory {
	var minEntries, maxEntries *stats.Gauge
	if env.Stats != nil {
		sc := env.Stats.Scope("maglev_lb.")
		minEntries, maxEntries = sc.Gauge("min_entries_per_host"), sc.Gauge("max_entries_per_host")
	}
	rnd := env.rand()
	return func(hosts []*upstream.Host, _ uint64) Picker {
		hosts, weights, sum := hashWeights(hosts, p.localityWeighted)
		if len(hosts) == 0 {
			return nil
		}
		m := newMaglev(hosts, weights, sum, p.tableSize, p.useHostname)
		m.rand = rnd
		if minEntries != nil && reportsStats(hosts) {
			minEntries.Set(int64(m.minEntries))
			maxEntries.Set(int64(m.maxEntries))
		}
		if p.balanceFactor > 0 {
			return newBoundedLoad(m, hosts, p.balanceFactor, env.activeRequests(), rnd)
		}
		return m
	}
}

// Maglev is the consistent hashing of the Maglev paper (section 3.4) over
// one host list, as Envoy builds it: a table of a prime number of slots,
// filled by the hosts in turn (in proportion to their weights), each
// taking the next free slot of its own permutation of the table. A hash
// goes to the host of its slot; a host change moves about 1/N of the
// slots.
type Maglev struct {
	hosts []*upstream.Host
	// The slots hold indexes into hosts: 16 bits while there are few
	// enough hosts (the usual case, an eighth of a table of pointers),
	// else 32.
	small []uint16
	large []uint32
	size  uint64
	rand  func() uint64
	// minEntries and maxEntries are the fewest and most slots of a host
	// (the maglev_lb gauges).
	minEntries, maxEntries uint64
}

// maglevEntry is one host while the table fills.
type maglevEntry struct {
	key          string
	index        int // in the sorted hosts
	offset, skip uint64
	weight       float64
	target       float64
	next, count  uint64
}

// newMaglev builds the table of hosts (non-empty) with size slots (a
// prime). Hosts are placed in the order of their hash keys, so that the
// table does not depend on the order of the list. A host's normalized
// weight is its weight over sum (hashWeights).
func newMaglev(hosts []*upstream.Host, weights []float64, sum float64, size uint64, useHostname bool) *Maglev {
	entries := make([]maglevEntry, len(hosts))
	var maxWeight float64
	for i, h := range hosts {
		key := hashKey(h, useHostname)
		w := weights[i] / sum
		maxWeight = max(maxWeight, w)
		entries[i] = maglevEntry{key: key, index: i, weight: w,
			offset: xxhash.Sum64String(key) % size,
			skip:   xxhashSeed1(key)%(size-1) + 1,
		}
	}
	slices.SortStableFunc(entries, func(a, b maglevEntry) int { return cmp.Compare(a.key, b.key) })
	m := &Maglev{hosts: make([]*upstream.Host, len(hosts)), size: size, minEntries: size}
	for i := range entries {
		m.hosts[i] = hosts[entries[i].index]
		entries[i].index = i
	}
	if len(hosts) <= 1<<16 {
		m.small = make([]uint16, size)
	} else {
		m.large = make([]uint32, size)
	}
	taken := make([]bool, size)
	for filled, round := uint64(0), 1.0; filled < size; round++ {
		for i := range entries {
			if filled == size {
				break
			}
			e := &entries[i]
			// A host of the largest weight takes a slot every round, one
			// of a third of it every third round.
			if round*e.weight < e.target {
				continue
			}
			e.target += maxWeight
			c := (e.offset + e.skip*e.next) % size
			for taken[c] {
				e.next++
				c = (e.offset + e.skip*e.next) % size
			}
			taken[c] = true
			if m.small != nil {
				m.small[c] = uint16(e.index)
			} else {
				m.large[c] = uint32(e.index)
			}
			e.next++
			e.count++
			filled++
		}
	}
	for _, e := range entries {
		m.minEntries = min(m.minEntries, e.count)
		m.maxEntries = max(m.maxEntries, e.count)
	}
	return m
}

// xxhashSeed1 is XXH64 with seed 1, which Envoy's maglev uses for a
// host's skip.
func xxhashSeed1(key string) uint64 {
	d := xxhash.NewWithSeed(1)
	_, _ = d.WriteString(key)
	return d.Sum64()
}

// Pick returns the host of the pick's hash key's slot, or of a random
// slot when the pick has none.
func (m *Maglev) Pick(ctx *upstream.PickContext) *upstream.Host {
	return m.at(hashOrRandom(ctx, m.rand))
}

// at returns the host of h's slot.
func (m *Maglev) at(h uint64) *upstream.Host {
	i := h % m.size
	if m.small != nil {
		return m.hosts[m.small[i]]
	}
	return m.hosts[m.large[i]]
}

// isPrime reports whether n is prime, by trial division (table sizes are
// at most 5,000,011).
func isPrime(n uint64) bool {
	if n < 2 {
		return false
	}
	for d := uint64(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
