package lb

import (
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Ring hash's defaults and limit, Envoy's.
const (
	DefaultMinRingSize = 1024
	DefaultMaxRingSize = 8 << 20
)

// ringHashPolicy is RING_HASH with its ring_hash_lb_config (or the typed
// RingHash).
type ringHashPolicy struct {
	minSize, maxSize uint64
	murmur           bool // hash_function MURMUR_HASH_2, else XX_HASH
	useHostname      bool
	// balanceFactor is hash_balance_factor, 0 when unset: bounded loads.
	balanceFactor uint32
	// localityWeighted folds the locality weights into the ring
	// (locality_weighted_lb_config).
	localityWeighted bool
	// hashPolicy is the typed policy's consistent_hashing_lb_config.hash_policy,
	// nil when unset: see HashPolicyOf.
	hashPolicy *router.HashPolicy
}

func (ringHashPolicy) Name() string    { return "RING_HASH" }
func (ringHashPolicy) HashBased() bool { return true }

func (p ringHashPolicy) Pickers(env Env) PickerFactory {
	var st *ringStats
	if env.Stats != nil {
		sc := env.Stats.Scope("ring_hash_lb.")
		st = &ringStats{size: sc.Gauge("size"), min: sc.Gauge("min_hashes_per_host"), max: sc.Gauge("max_hashes_per_host")}
	}
	rnd := env.rand()
	return func(hosts []*upstream.Host, _ uint64) Picker {
		hosts, weights, sum := hashWeights(hosts, p.localityWeighted)
		if len(hosts) == 0 {
			return nil
		}
		r := newRing(hosts, weights, sum, p.minSize, p.maxSize, p.murmur, p.useHostname)
		r.rand = rnd
		if st != nil && reportsStats(hosts) {
			st.size.Set(int64(len(r.hashes)))
			st.min.Set(int64(r.minHashes))
			st.max.Set(int64(r.maxHashes))
		}
		if p.balanceFactor > 0 {
			return newBoundedLoad(r, hosts, p.balanceFactor, env.activeRequests(), rnd)
		}
		return r
	}
}

// ringStats are the gauges cluster.<name>.ring_hash_lb.*.
type ringStats struct {
	size, min, max *stats.Gauge
}

// reportsStats reports whether the table built for hosts is the one the
// gauges describe. Envoy builds one ring per priority level, over its
// healthy hosts (all of them in panic), and each build sets the gauges;
// the Balancer also builds one for the level's degraded hosts, which
// must not: the gauges then describe the last level's healthy ring, as
// Envoy's do in the common case.
func reportsStats(hosts []*upstream.Host) bool {
	for _, h := range hosts {
		if !h.Degraded() {
			return true
		}
	}
	return false
}

// Ring is Envoy's ketama-style consistent hash ring over one host list:
// each host owns points on a 64-bit circle, as many as its share of the
// weights asks, and a hash goes to the host owning the first point at or
// after it. Adding or removing one host moves only the hashes next to its
// points: about 1/N of them.
type Ring struct {
	hashes []uint64 // the points, ascending
	hosts  []*upstream.Host
	// index[b] is the first point whose top bits (h >> shift) are b or
	// more, so that a lookup searches the one or two points of its bucket
	// rather than the whole ring: a weighted ring of 1,000 hosts has
	// 50,000 points, whose binary search misses the cache at every step.
	index []uint32
	shift uint
	rand  func() uint64
	// minHashes and maxHashes are the fewest and most points of a host
	// (the ring_hash_lb gauges).
	minHashes, maxHashes uint64
}

// newRing builds the ring of hosts (non-empty) as Envoy's does: the
// lightest host gets at least ceil(minSize * its normalized weight)
// points, the ring at most maxSize, each point the hash of
// "<key>_<i>" with the host's hash key. A host's normalized weight is
// its weight over sum (hashWeights).
func newRing(hosts []*upstream.Host, weights []float64, sum float64, minSize, maxSize uint64, murmur, useHostname bool) *Ring {
	minNorm := 1.0
	for _, w := range weights {
		minNorm = min(minNorm, w/sum)
	}
	scale := min(math.Ceil(minNorm*float64(minSize))/minNorm, float64(maxSize))
	size := uint64(math.Ceil(scale))
	type point struct {
		hash uint64
		host *upstream.Host
	}
	points := make([]point, 0, size)
	r := &Ring{minHashes: size}
	var current, target float64
	var key []byte
	for i, h := range hosts {
		key = append(append(key[:0], hashKey(h, useHostname)...), '_')
		prefix := len(key)
		target += scale * weights[i] / sum
		var n uint64
		for current < target {
			key = strconv.AppendUint(key[:prefix], n, 10)
			var hash uint64
			if murmur {
				hash = murmur2(string(key), murmurSeed)
			} else {
				hash = xxhash.Sum64(key)
			}
			points = append(points, point{hash, h})
			n++
			current++
		}
		r.minHashes = min(r.minHashes, n)
		r.maxHashes = max(r.maxHashes, n)
	}
	slices.SortStableFunc(points, func(a, b point) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	r.hashes = make([]uint64, len(points))
	r.hosts = make([]*upstream.Host, len(points))
	for i, p := range points {
		r.hashes[i], r.hosts[i] = p.hash, p.host
	}
	r.buildIndex()
	return r
}

// maxIndexBits bounds the index: 2^20 buckets (4 MiB) serve rings of a
// million points; the largest rings search a few more points per bucket.
const maxIndexBits = 20

// buildIndex buckets the points by their top bits, about one point per
// bucket.
func (r *Ring) buildIndex() {
	n := min(max(bits.Len64(uint64(len(r.hashes))), 1), maxIndexBits)
	r.shift = uint(64 - n)
	buckets := 1 << n
	r.index = make([]uint32, buckets+1)
	j := 0
	for b := range buckets {
		for j < len(r.hashes) && r.hashes[j]>>r.shift < uint64(b) {
			j++
		}
		r.index[b] = uint32(j)
	}
	r.index[buckets] = uint32(len(r.hashes))
}

// Pick returns the host of the pick's hash key, or of a random point when
// the pick has none (Envoy's ring hash then acts as a random balancer).
func (r *Ring) Pick(ctx *upstream.PickContext) *upstream.Host {
	return r.at(hashOrRandom(ctx, r.rand))
}

// hashOrRandom is the key a hash-based picker looks up: the pick's hash
// key, or a random number when it has none, as Envoy's ring hash and
// maglev then act as random balancers.
func hashOrRandom(ctx *upstream.PickContext, rand func() uint64) uint64 {
	if h, ok := ctx.RequestHash(); ok {
		return h
	}
	return rand()
}

// at returns the host owning the first point at or after h, wrapping
// round to the first point.
func (r *Ring) at(h uint64) *upstream.Host {
	b := h >> r.shift
	lo, hi := r.index[b], r.index[b+1]
	// Every point before lo is below h and every point from hi on is
	// above it: the answer is in lo..hi, hi when none of the bucket's
	// points is at or after h.
	i := int(lo)
	for i < int(hi) && r.hashes[i] < h {
		i++
	}
	if i == len(r.hashes) {
		i = 0
	}
	return r.hosts[i]
}

// hashKey is what a host's place on a ring or in a maglev table hashes:
// its endpoint metadata's envoy.lb hash_key when set, else its hostname
// (use_hostname_for_hashing) or its address. A host without a hostname
// uses its address.
func hashKey(h *upstream.Host, useHostname bool) string {
	if md := h.Metadata.GetFilterMetadata()["envoy.lb"]; md != nil {
		if k := md.GetFields()["hash_key"].GetStringValue(); k != "" {
			return k
		}
	}
	if useHostname && h.Hostname != "" {
		return h.Hostname
	}
	return h.Address
}
