// Package tokenbucket is Envoy's atomic token bucket, which the local rate
// limit filters (HTTP and network) take their tokens from, and the
// compilation of a TokenBucket message with Envoy's checks.
package tokenbucket

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// MinFill is Envoy's shortest fill_interval of a local rate limit.
const MinFill = 50 * time.Millisecond

// Spec is a compiled TokenBucket.
type Spec struct {
	// MaxTokens is the bucket's size, and what it holds at first.
	MaxTokens uint32
	// PerFill tokens are added every Fill (tokens_per_fill, default 1;
	// fill_interval).
	PerFill uint32
	Fill    time.Duration
}

// Compile reads a TokenBucket with Envoy's checks: a fill_interval of at
// least MinFill and some tokens per fill, for a bucket that holds tokens.
// Errors name the field below the bucket.
func Compile(tb *typev3.TokenBucket) (Spec, error) {
	s := Spec{MaxTokens: tb.GetMaxTokens(), PerFill: 1}
	if v := tb.GetTokensPerFill(); v != nil {
		s.PerFill = v.GetValue()
	}
	if d := tb.GetFillInterval(); d != nil {
		if err := d.CheckValid(); err != nil {
			return Spec{}, fmt.Errorf("fill_interval: %w", err)
		}
		s.Fill = d.AsDuration()
	}
	if s.MaxTokens > 0 && s.Fill < MinFill {
		// Envoy's words.
		return Spec{}, errors.New("fill_interval: local rate limit token bucket fill timer must be >= 50ms")
	}
	if s.MaxTokens > 0 && s.PerFill == 0 {
		return Spec{}, errors.New("tokens_per_fill: must be above 0")
	}
	return s, nil
}

// CompileRequired reads the token_bucket a connection limit requires (the
// network and listener local rate limits): one that holds tokens, with
// Compile's checks. Errors name the path from token_bucket.
func CompileRequired(tb *typev3.TokenBucket) (Spec, error) {
	spec, err := Compile(tb)
	switch {
	case tb == nil:
		return Spec{}, errors.New("token_bucket: required")
	case err != nil:
		return Spec{}, fmt.Errorf("token_bucket.%w", err)
	case spec.MaxTokens == 0:
		return Spec{}, errors.New("token_bucket.max_tokens: must be above 0")
	}
	return spec, nil
}

// CompileConnectionLimit reads the two fields the network and listener
// local rate limits require, stat_prefix and token_bucket (CompileRequired),
// reporting both errors at once. Errors name the paths below the filter's
// typed_config.
func CompileConnectionLimit(statPrefix string, tb *typev3.TokenBucket) (Spec, error) {
	var errs []error
	if statPrefix == "" {
		errs = append(errs, errors.New("stat_prefix: required"))
	}
	spec, err := CompileRequired(tb)
	if err != nil {
		errs = append(errs, err)
	}
	return spec, errors.Join(errs...)
}

// Clock reads a clock as seconds since its epoch, the time base of the
// buckets that share it.
type Clock struct {
	epoch time.Time
	now   func() time.Time
}

// NewClock starts a Clock at now's current reading; nil means time.Now.
func NewClock(now func() time.Time) Clock {
	if now == nil {
		now = time.Now
	}
	return Clock{epoch: now(), now: now}
}

// Seconds is the time since the clock's epoch.
func (c Clock) Seconds() float64 { return c.now().Sub(c.epoch).Seconds() }

// Bucket is a token bucket that refills continuously, Envoy's atomic
// token bucket: max tokens, refilled at rate tokens a second, full at
// first. Its whole state is one number, the time (in seconds of its
// Clock) at which the bucket was empty, updated with compare-and-swap:
// taking a token takes no lock.
type Bucket struct {
	max  float64
	rate float64
	// emptyAt is the float64 bits of the time the bucket was empty.
	emptyAt atomic.Uint64
}

// New returns a full bucket of s at now (seconds of the bucket's Clock).
// s must hold tokens (MaxTokens above 0, as Compile checks the rest).
func New(s Spec, now float64) *Bucket {
	b := &Bucket{max: float64(s.MaxTokens), rate: float64(s.PerFill) / s.Fill.Seconds()}
	b.emptyAt.Store(math.Float64bits(now - b.max/b.rate))
	return b
}

// Max is the bucket's size (max_tokens).
func (b *Bucket) Max() uint64 { return uint64(b.max) }

// Rate is how many tokens the bucket gains a second.
func (b *Bucket) Rate() float64 { return b.rate }

// tokens is what the bucket holds at now, given the time it was empty.
func (b *Bucket) tokens(now, emptyAt float64) float64 {
	return min(b.max, (now-emptyAt)*b.rate)
}

// Consume takes one token at now; false when there is none.
func (b *Bucket) Consume(now float64) bool { return b.ConsumeN(now, 1) }

// ConsumeN takes n tokens at now (a rate limit descriptor's
// hits_addend); false, taking none, when the bucket holds fewer.
func (b *Bucket) ConsumeN(now float64, n uint64) bool { return b.ConsumeShare(now, n, 1) }

// ConsumeShare takes n tokens at now for a holder of share (in (0, 1]) of
// the bucket: n/share of its tokens, as Envoy's local rate limits take
// them when a local cluster's hosts share one rate
// (local_cluster_rate_limit: share is 1 over the number of hosts). False,
// taking none, when the bucket holds fewer.
func (b *Bucket) ConsumeShare(now float64, n uint64, share float64) bool {
	want := float64(n) / share
	for {
		old := b.emptyAt.Load()
		total := b.tokens(now, math.Float64frombits(old))
		if total < want {
			return false
		}
		next := now - (total-want)/b.rate
		if b.emptyAt.CompareAndSwap(old, math.Float64bits(next)) {
			return true
		}
	}
}

// Refill gives n tokens back to the bucket at now (a rate limit
// descriptor's hits_addend with is_negative_hits), up to its size.
func (b *Bucket) Refill(now float64, n uint64) {
	for {
		old := b.emptyAt.Load()
		total := min(b.max, b.tokens(now, math.Float64frombits(old))+float64(n))
		next := now - total/b.rate
		if b.emptyAt.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// Remaining is the whole tokens left at now.
func (b *Bucket) Remaining(now float64) uint64 {
	return uint64(max(0, b.tokens(now, math.Float64frombits(b.emptyAt.Load()))))
}

// ResetSeconds is how long until a token is available at now, in whole
// seconds (rounded down, as Envoy renders x-ratelimit-reset).
func (b *Bucket) ResetSeconds(now float64) uint64 {
	total := b.tokens(now, math.Float64frombits(b.emptyAt.Load()))
	if total >= 1 {
		return 0
	}
	ms := uint64(math.Ceil((1 - total) / b.rate * 1000))
	return ms / 1000
}

// RetryAfterSeconds is how long until the next token is available at now,
// in whole seconds rounded up and at least 1: the Retry-After of a request
// the bucket refused.
func (b *Bucket) RetryAfterSeconds(now float64) uint64 {
	total := b.tokens(now, math.Float64frombits(b.emptyAt.Load()))
	if total >= 1 {
		return 1
	}
	return max(1, uint64(math.Ceil((1-total)/b.rate)))
}
