package localratelimit

import (
	"fmt"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"slices"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tokenbucket"
)

// limiterSpec is what a limiter is made of: the default token bucket and
// the descriptors' buckets, so that a per-connection limiter can be made
// afresh for each connection.
type limiterSpec struct {
	// bucket is the default bucket; Fill 0 means none. MaxTokens 0 with
	// a Fill denies every request the default bucket would take.
	bucket      tokenbucket.Spec
	descriptors []descriptorSpec
	// alwaysConsumeDefault: the default bucket is taken from even when a
	// descriptor matched (always_consume_default_token_bucket, default
	// true).
	alwaysConsumeDefault bool
}

// descriptorSpec is one configured descriptor and its bucket.
type descriptorSpec struct {
	entries []router.DescriptorEntry
	bucket  tokenbucket.Spec
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
		if spec.bucket, err = tokenbucket.Compile(d.GetTokenBucket()); err != nil {
			return nil, fmt.Errorf("[%d].token_bucket.%w", i, err)
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
	def *tokenbucket.Bucket
	// alwaysDeny: a default bucket of no tokens.
	alwaysDeny           bool
	descriptors          []descriptorLimit
	alwaysConsumeDefault bool
	clock                tokenbucket.Clock
}

// descriptorLimit is one descriptor and its bucket (nil: max_tokens 0,
// which denies).
type descriptorLimit struct {
	entries []router.DescriptorEntry
	bucket  *tokenbucket.Bucket
}

// newLimiter makes a limiter of full buckets, on clock now.
func (sp *limiterSpec) newLimiter(now func() time.Time) *limiter {
	l := &limiter{alwaysConsumeDefault: sp.alwaysConsumeDefault, clock: tokenbucket.NewClock(now)}
	if sp.bucket.Fill > 0 {
		if sp.bucket.MaxTokens == 0 {
			l.alwaysDeny = true
		} else {
			l.def = tokenbucket.New(sp.bucket, 0)
		}
	}
	for _, d := range sp.descriptors {
		dl := descriptorLimit{entries: d.entries}
		if d.bucket.MaxTokens > 0 {
			dl.bucket = tokenbucket.New(d.bucket, 0)
		}
		l.descriptors = append(l.descriptors, dl)
	}
	return l
}

// result is a limiter's answer: whether the request may go, and the
// bucket that decided (for the x-ratelimit headers; nil for none) and
// the index of the request's descriptor it belongs to (-1: the default
// bucket, or none).
type result struct {
	allowed    bool
	bucket     *tokenbucket.Bucket
	at         float64
	descriptor int
}

// requestExtra is what a request's descriptor carries besides its
// entries: the tokens it takes (its hits_addend, else 1) and its rate
// limit entry's x_ratelimit_option.
type requestExtra struct {
	hits uint64
	// negative is the entry's is_negative_hits: the hits are given back
	// to the bucket the descriptor matched rather than taken from it.
	negative   bool
	xRateLimit routev3.RateLimit_XRateLimitOption
}

// match is a configured descriptor a request's descriptor (index req)
// matched.
type match struct {
	d   *descriptorLimit
	req int
}

// allowed takes the request's tokens, as Envoy's requestAllowed: every
// matched descriptor's bucket, the slowest to refill first, stopping at
// the first that is empty (a descriptor with is_negative_hits refills
// its bucket instead); then the default bucket, when no descriptor
// matched or always_consume_default_token_bucket.
func (l *limiter) allowed(request [][]router.DescriptorEntry, extras []requestExtra, matched []match) (result, []match) {
	now := l.clock.Seconds()
	matched = matched[:0]
	for j, rd := range request {
		for i := range l.descriptors {
			if d := &l.descriptors[i]; slices.Equal(d.entries, rd) {
				matched = append(matched, match{d, j})
				break
			}
		}
	}
	if len(matched) > 1 {
		slices.SortStableFunc(matched, func(a, b match) int {
			ra, rb := rateOf(a.d.bucket), rateOf(b.d.bucket)
			switch {
			case ra < rb:
				return -1
			case ra > rb:
				return 1
			}
			return 0
		})
	}
	for _, m := range matched {
		hits := uint64(1)
		if m.req < len(extras) {
			hits = extras[m.req].hits
			if extras[m.req].negative {
				// As Envoy's: a refill, which never denies.
				if m.d.bucket != nil {
					m.d.bucket.Refill(now, hits)
				}
				continue
			}
		}
		if m.d.bucket == nil || !m.d.bucket.ConsumeN(now, hits) {
			return result{allowed: false, bucket: m.d.bucket, at: now, descriptor: m.req}, matched
		}
	}
	first := result{descriptor: -1, at: now}
	if len(matched) > 0 {
		first.bucket, first.descriptor = matched[0].d.bucket, matched[0].req
	}
	if len(matched) > 0 && !l.alwaysConsumeDefault {
		first.allowed = true
		return first, matched
	}
	if l.def == nil {
		first.allowed = !l.alwaysDeny
		return first, matched
	}
	if !l.def.Consume(now) {
		return result{allowed: false, bucket: l.def, at: now, descriptor: -1}, matched
	}
	if first.bucket == nil {
		first.bucket = l.def
	}
	first.allowed = true
	return first, matched
}

// rateOf is a bucket's refill rate; a nil bucket (no tokens) sorts first.
func rateOf(b *tokenbucket.Bucket) float64 {
	if b == nil {
		return -1
	}
	return b.Rate()
}
