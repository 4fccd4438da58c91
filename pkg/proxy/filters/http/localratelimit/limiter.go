package localratelimit

import (
	"fmt"
	"slices"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
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
	// wildcards are the descriptors with an empty value, each keeping
	// the buckets of maxDynamic value tuples (max_dynamic_descriptors).
	wildcards  []descriptorSpec
	maxDynamic int
	// alwaysConsumeDefault: the default bucket is taken from even when a
	// descriptor matched (always_consume_default_token_bucket, default
	// true).
	alwaysConsumeDefault bool
	// members, with local_cluster_rate_limit, is the local cluster's
	// host count (its membership_total): the buckets are shared
	// evenly between its hosts. nil without.
	members *stats.Gauge
}

// descriptorSpec is one configured descriptor and its bucket.
type descriptorSpec struct {
	entries []router.DescriptorEntry
	bucket  tokenbucket.Spec
	// shadow is the descriptor's shadow_mode: its bucket is taken from,
	// but running out only marks the request (see result.shadow).
	shadow bool
}

// compileDescriptors reads the descriptors: the exact ones, and the
// wildcards (with an entry of empty value), as Envoy sorts them. Errors
// name the field below the list ("[0].token_bucket.fill_interval: ...").
func compileDescriptors(ds []*ratelimitv3.LocalRateLimitDescriptor) (exact, wildcards []descriptorSpec, err error) {
	// Each kept descriptor's index in ds, for the duplicate's message.
	var exactAt, wildcardsAt []int
	for i, d := range ds {
		spec := descriptorSpec{shadow: d.GetShadowMode()}
		wildcard := false
		for _, e := range d.GetEntries() {
			wildcard = wildcard || e.GetValue() == ""
			spec.entries = append(spec.entries, router.DescriptorEntry{Key: e.GetKey(), Value: e.GetValue()})
		}
		if len(spec.entries) == 0 {
			return nil, nil, fmt.Errorf("[%d].entries: at least one entry is required", i)
		}
		if spec.bucket, err = tokenbucket.Compile(d.GetTokenBucket()); err != nil {
			return nil, nil, fmt.Errorf("[%d].token_bucket.%w", i, err)
		}
		list, at := &exact, &exactAt
		if wildcard {
			list, at = &wildcards, &wildcardsAt
		}
		for k, prev := range *list {
			if slices.Equal(prev.entries, spec.entries) {
				return nil, nil, fmt.Errorf("[%d]: duplicate descriptor in the local rate descriptor: also descriptors[%d]", i, (*at)[k])
			}
		}
		*list = append(*list, spec)
		*at = append(*at, i)
	}
	return exact, wildcards, nil
}

// limiter applies a limiterSpec: its buckets are shared by the requests
// it serves (all of the filter's, or one connection's).
type limiter struct {
	def *tokenbucket.Bucket
	// alwaysDeny: a default bucket of no tokens.
	alwaysDeny           bool
	descriptors          []descriptorLimit
	wildcards            []*dynamicLimit
	alwaysConsumeDefault bool
	clock                tokenbucket.Clock
	// members is the local cluster's host count, with
	// local_cluster_rate_limit (see limiterSpec).
	members *stats.Gauge
}

// descriptorLimit is one descriptor and its bucket (nil: max_tokens 0,
// which denies).
type descriptorLimit struct {
	entries []router.DescriptorEntry
	bucket  *tokenbucket.Bucket
	shadow  bool
}

// newLimiter makes a limiter of full buckets, on clock now.
func (sp *limiterSpec) newLimiter(now func() time.Time) *limiter {
	l := &limiter{alwaysConsumeDefault: sp.alwaysConsumeDefault, clock: tokenbucket.NewClock(now), members: sp.members}
	if sp.bucket.Fill > 0 {
		if sp.bucket.MaxTokens == 0 {
			l.alwaysDeny = true
		} else {
			l.def = tokenbucket.New(sp.bucket, 0)
		}
	}
	for _, d := range sp.descriptors {
		dl := descriptorLimit{entries: d.entries, shadow: d.shadow}
		if d.bucket.MaxTokens > 0 {
			dl.bucket = tokenbucket.New(d.bucket, 0)
		}
		l.descriptors = append(l.descriptors, dl)
	}
	for _, d := range sp.wildcards {
		l.wildcards = append(l.wildcards, newDynamicLimit(d, sp.maxDynamic))
	}
	return l
}

// share is the part of the buckets this proxy holds: 1, or 1 over the
// local cluster's hosts with local_cluster_rate_limit (1 while it has
// none), as Envoy's even share.
func (l *limiter) share() float64 {
	if l.members == nil {
		return 1
	}
	if n := l.members.Value(); n > 1 {
		return 1 / float64(n)
	}
	return 1
}

// result is a limiter's answer: whether the request may go, and the
// bucket that decided (for the x-ratelimit headers; nil for none) and
// the index of the request's descriptor it belongs to (-1: the default
// bucket, or none).
type result struct {
	allowed bool
	// shadow: the request is allowed, but only because the buckets that
	// ran out were shadow_mode descriptors' (allowed is then false, and
	// the filter counts it rate limited without enforcing).
	shadow     bool
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

// match is the bucket of the configured descriptor a request's
// descriptor (index req) matched; nil for max_tokens 0, which denies.
type match struct {
	bucket *tokenbucket.Bucket
	req    int
	shadow bool // the descriptor's shadow_mode
}

// allowed takes the request's tokens, as Envoy's requestAllowed: every
// matched descriptor's bucket (an exact descriptor's, else the first
// matching wildcard's bucket for the request's values), the slowest to
// refill first, stopping at the first that is empty (a descriptor with
// is_negative_hits refills its bucket instead); then the default bucket,
// when no descriptor matched or always_consume_default_token_bucket. With
// local_cluster_rate_limit, each token taken costs the number of the
// local cluster's hosts.
func (l *limiter) allowed(request [][]router.DescriptorEntry, extras []requestExtra, matched []match) (result, []match) {
	now := l.clock.Seconds()
	matched = matched[:0]
	for j, rd := range request {
		found := false
		for i := range l.descriptors {
			if d := &l.descriptors[i]; slices.Equal(d.entries, rd) {
				matched = append(matched, match{d.bucket, j, d.shadow})
				found = true
				break
			}
		}
		if found {
			continue
		}
		for _, w := range l.wildcards {
			if w.matches(rd) {
				matched = append(matched, match{w.bucket(rd, now), j, w.shadow})
				break
			}
		}
	}
	if len(matched) > 1 {
		slices.SortStableFunc(matched, func(a, b match) int {
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
	share := l.share()
	// shadowed is the first shadow_mode descriptor that ran out: as
	// Envoy, the other descriptors and the default bucket are still
	// taken from, and any of them can deny the request.
	shadowed := -1
	for k, m := range matched {
		hits := uint64(1)
		if m.req < len(extras) {
			hits = extras[m.req].hits
			if extras[m.req].negative {
				// As Envoy's: a refill, which never denies.
				if m.bucket != nil {
					m.bucket.Refill(now, hits)
				}
				continue
			}
		}
		if m.bucket == nil || !m.bucket.ConsumeShare(now, hits, share) {
			if m.shadow {
				if shadowed < 0 {
					shadowed = k
				}
				continue
			}
			return result{allowed: false, bucket: m.bucket, at: now, descriptor: m.req}, matched
		}
	}
	res, matched := l.allowedDefault(now, share, matched)
	if res.allowed && shadowed >= 0 {
		m := matched[shadowed]
		return result{shadow: true, bucket: m.bucket, at: now, descriptor: m.req}, matched
	}
	return res, matched
}

// allowedDefault ends allowed once the descriptors' buckets are taken
// from: the default bucket's part.
func (l *limiter) allowedDefault(now, share float64, matched []match) (result, []match) {
	first := result{descriptor: -1, at: now}
	if len(matched) > 0 {
		first.bucket, first.descriptor = matched[0].bucket, matched[0].req
	}
	if len(matched) > 0 && !l.alwaysConsumeDefault {
		first.allowed = true
		return first, matched
	}
	if l.def == nil {
		first.allowed = !l.alwaysDeny
		return first, matched
	}
	if !l.def.ConsumeShare(now, 1, share) {
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
