package localratelimit

import (
	"math"
	"sync/atomic"
	"time"
)

// bucket is a token bucket that refills continuously, Envoy's atomic
// token bucket: max tokens, refilled at rate tokens a second, full at
// first. Its whole state is one number, the time (in seconds since the
// limiter's epoch) at which the bucket was empty, updated with
// compare-and-swap: the request path takes no lock.
type bucket struct {
	max  float64
	rate float64
	// emptyAt is the float64 bits of the time the bucket was empty.
	emptyAt atomic.Uint64
	// fill is the fill_interval, for the ordering of descriptors.
	fill time.Duration
}

// newBucket returns a full bucket of maxTokens, refilled with perFill
// tokens every fill, at now (seconds since the epoch).
func newBucket(maxTokens, perFill uint32, fill time.Duration, now float64) *bucket {
	b := &bucket{max: float64(maxTokens), rate: float64(perFill) / fill.Seconds(), fill: fill}
	b.emptyAt.Store(math.Float64bits(now - b.max/b.rate))
	return b
}

// tokens is what the bucket holds at now, given the time it was empty.
func (b *bucket) tokens(now, emptyAt float64) float64 {
	return min(b.max, (now-emptyAt)*b.rate)
}

// consume takes one token at now; false when there is none.
func (b *bucket) consume(now float64) bool {
	for {
		old := b.emptyAt.Load()
		total := b.tokens(now, math.Float64frombits(old))
		if total < 1 {
			return false
		}
		next := now - (total-1)/b.rate
		if b.emptyAt.CompareAndSwap(old, math.Float64bits(next)) {
			return true
		}
	}
}

// remaining is the whole tokens left at now.
func (b *bucket) remaining(now float64) uint64 {
	return uint64(max(0, b.tokens(now, math.Float64frombits(b.emptyAt.Load()))))
}

// resetSeconds is how long until a token is available at now, in whole
// seconds (rounded down, as Envoy renders x-ratelimit-reset).
func (b *bucket) resetSeconds(now float64) uint64 {
	total := b.tokens(now, math.Float64frombits(b.emptyAt.Load()))
	if total >= 1 {
		return 0
	}
	ms := uint64(math.Ceil((1 - total) / b.rate * 1000))
	return ms / 1000
}
