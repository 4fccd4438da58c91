package localratelimit

import (
	"errors"
	"fmt"
	"slices"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// minFill is Envoy's shortest fill_interval.
const minFill = 50 * time.Millisecond

// limiterSpec is what a limiter is made of: the default token bucket and
// the descriptors' buckets, so that a per-connection limiter can be made
// afresh for each connection.
type limiterSpec struct {
	// maxTokens, perFill and fill are the default bucket; fill 0 means
	// none. maxTokens 0 with a fill denies every request the default
	// bucket would take.
	maxTokens, perFill uint32
	fill               time.Duration
	descriptors        []descriptorSpec
	// alwaysConsumeDefault: the default bucket is taken from even when a
	// descriptor matched (always_consume_default_token_bucket, default
	// true).
	alwaysConsumeDefault bool
}

// descriptorSpec is one configured descriptor and its bucket.
type descriptorSpec struct {
	entries            []router.DescriptorEntry
	maxTokens, perFill uint32
	fill               time.Duration
}

// compileBucket reads a TokenBucket; errors name the field below it.
func compileBucket(tb *typev3.TokenBucket) (maxTokens, perFill uint32, fill time.Duration, err error) {
	maxTokens, perFill = tb.GetMaxTokens(), 1
	if v := tb.GetTokensPerFill(); v != nil {
		perFill = v.GetValue()
	}
	if d := tb.GetFillInterval(); d != nil {
		if err := d.CheckValid(); err != nil {
			return 0, 0, 0, fmt.Errorf("fill_interval: %w", err)
		}
		fill = d.AsDuration()
	}
	if maxTokens > 0 && fill < minFill {
		// Envoy's words.
		return 0, 0, 0, errors.New("fill_interval: local rate limit token bucket fill timer must be >= 50ms")
	}
	return maxTokens, perFill, fill, nil
}

// compileDescriptors reads the descriptors; errors name the field below
// the list ("[0].entries[1].value: ...").
func compileDescriptors(ds []*ratelimitv3.LocalRateLimitDescriptor) ([]descriptorSpec, error) {
	var out []descriptorSpec
	for i, d := range ds {
		var spec descriptorSpec
		for j, e := range d.GetEntries() {
			if e.GetValue() == "" {
				return nil, fmt.Errorf("[%d].entries[%d].value: an empty value (a wildcard descriptor) is not supported by Outrigger", i, j)
			}
			spec.entries = append(spec.entries, router.DescriptorEntry{Key: e.GetKey(), Value: e.GetValue()})
		}
		if len(spec.entries) == 0 {
			return nil, fmt.Errorf("[%d].entries: at least one entry is required", i)
		}
		var err error
		if spec.maxTokens, spec.perFill, spec.fill, err = compileBucket(d.GetTokenBucket()); err != nil {
			return nil, fmt.Errorf("[%d].token_bucket.%w", i, err)
		}
		if spec.maxTokens > 0 && spec.perFill == 0 {
			return nil, fmt.Errorf("[%d].token_bucket.tokens_per_fill: must be above 0", i)
		}
		for k, prev := range out {
			if slices.Equal(prev.entries, spec.entries) {
				return nil, fmt.Errorf("[%d]: duplicate descriptor in the local rate descriptor: also descriptors[%d]", i, k)
			}
		}
		out = append(out, spec)
	}
	return out, nil
}

// limiter applies a limiterSpec: its buckets are shared by the requests
// it serves (all of the filter's, or one connection's).
type limiter struct {
	def *bucket
	// alwaysDeny: a default bucket of no tokens.
	alwaysDeny           bool
	descriptors          []descriptorLimit
	alwaysConsumeDefault bool
	epoch                time.Time
	now                  func() time.Time
}

// descriptorLimit is one descriptor and its bucket (nil: max_tokens 0,
// which denies).
type descriptorLimit struct {
	entries []router.DescriptorEntry
	bucket  *bucket
}

// newLimiter makes a limiter of full buckets, on clock now.
func (sp *limiterSpec) newLimiter(now func() time.Time) *limiter {
	l := &limiter{alwaysConsumeDefault: sp.alwaysConsumeDefault, now: now, epoch: now()}
	if sp.fill > 0 {
		if sp.maxTokens == 0 {
			l.alwaysDeny = true
		} else {
			l.def = newBucket(sp.maxTokens, sp.perFill, sp.fill, 0)
		}
	}
	for _, d := range sp.descriptors {
		dl := descriptorLimit{entries: d.entries}
		if d.maxTokens > 0 {
			dl.bucket = newBucket(d.maxTokens, d.perFill, d.fill, 0)
		}
		l.descriptors = append(l.descriptors, dl)
	}
	return l
}

// seconds is the time since the limiter's epoch.
func (l *limiter) seconds() float64 { return l.now().Sub(l.epoch).Seconds() }

// result is a limiter's answer: whether the request may go, and the
// bucket that decided (for the x-ratelimit headers; nil for none).
type result struct {
	allowed bool
	bucket  *bucket
	at      float64
}

// allowed takes the request's tokens, as Envoy's requestAllowed: every
// matched descriptor's bucket, the slowest to refill first, stopping at
// the first that is empty; then the default bucket, when no descriptor
// matched or always_consume_default_token_bucket.
func (l *limiter) allowed(request [][]router.DescriptorEntry, matched []*descriptorLimit) (result, []*descriptorLimit) {
	now := l.seconds()
	matched = matched[:0]
	for _, rd := range request {
		for i := range l.descriptors {
			if d := &l.descriptors[i]; slices.Equal(d.entries, rd) {
				matched = append(matched, d)
				break
			}
		}
	}
	if len(matched) > 1 {
		slices.SortStableFunc(matched, func(a, b *descriptorLimit) int {
			ra, rb := rateOf(a.bucket), rateOf(b.bucket)
			switch {
			case ra < rb:
				return -1
			case ra > rb:
				return 1
			}
			return 0
		})
	}
	for _, d := range matched {
		if d.bucket == nil || !d.bucket.consume(now) {
			return result{allowed: false, bucket: d.bucket, at: now}, matched
		}
	}
	var first *bucket
	if len(matched) > 0 {
		first = matched[0].bucket
	}
	if len(matched) > 0 && !l.alwaysConsumeDefault {
		return result{allowed: true, bucket: first, at: now}, matched
	}
	if l.def == nil {
		return result{allowed: !l.alwaysDeny, bucket: first, at: now}, matched
	}
	if !l.def.consume(now) {
		return result{allowed: false, bucket: l.def, at: now}, matched
	}
	if first == nil {
		first = l.def
	}
	return result{allowed: true, bucket: first, at: now}, matched
}

// rateOf is a bucket's refill rate; a nil bucket (no tokens) sorts first.
func rateOf(b *bucket) float64 {
	if b == nil {
		return -1
	}
	return b.rate
}
