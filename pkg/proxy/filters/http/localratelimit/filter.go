package localratelimit

import (
	"math/rand/v2"
	"strconv"
	"sync"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// The x-ratelimit headers (draft 03).
const (
	hLimit     = "x-ratelimit-limit"
	hRemaining = "x-ratelimit-remaining"
	hReset     = "x-ratelimit-reset"
	// hRetryAfter is enable_retry_after_header's header.
	hRetryAfter = "retry-after"
)

// grpcResourceExhausted is the gRPC status of rate_limited_as_resource_exhausted.
const grpcResourceExhausted = 8

// filterConfig is the compiled filter.
type filterConfig struct {
	// name is the key of the filter's per-route configurations.
	name string
	cfg  *config
	pool sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	return c.pool.Get().(*filter)
}

// filter is one request's filter, recycled once the request ends.
type filter struct {
	fc *filterConfig
	// cfg is the configuration used: the route's or the filter's.
	cfg *config
	// res is the limiter's answer, for the x-ratelimit headers; limited
	// records that the filter answered 429 (its response headers).
	res     result
	limited bool
	// Scratch space for the request's descriptors.
	entries     []router.DescriptorEntry
	descriptors [][]router.DescriptorEntry
	// extras are each descriptor's hits (hits_addend, else 1, and
	// is_negative_hits) and x_ratelimit_option.
	extras  []requestExtra
	matched []match
	// nums renders the x-ratelimit values.
	nums []byte
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder, as Envoy's decodeHeaders.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.fc.cfg
	if rc, ok := s.RouteConfig(f.fc.name).(*config); ok {
		c = rc
	}
	f.cfg = c
	if c.enabled == nil || !c.enabled.Enabled(c.runtime, rand.Uint64()) {
		return httpfilter.Continue
	}
	c.stats.enabled.Inc()
	if c.hasDescriptors {
		f.populate(s, c)
	}
	l := c.shared
	if c.perConnection {
		l = s.ConnectionState(c, c.newConnLimiter).(*limiter)
	}
	f.res, f.matched = l.allowed(f.descriptors, f.extras, f.matched)
	if f.res.allowed {
		c.stats.ok.Inc()
		return httpfilter.Continue
	}
	c.stats.rateLimited.Inc()
	if f.res.shadow {
		// A shadow_mode descriptor ran out: counted rate limited, as
		// Envoy counts it, and never enforced.
		return httpfilter.Continue
	}
	if c.enforced == nil || !c.enforced.Enabled(c.runtime, rand.Uint64()) {
		c.requestHeaders.Apply(s.RequestHeaders(), nil)
		return httpfilter.Continue
	}
	c.stats.enforced.Inc()
	f.limited = true
	const body, details = "local_rate_limited", "local_rate_limited"
	if c.grpcExhausted {
		s.SendGrpcLocalReply(c.status, grpcResourceExhausted, body, accesslog.RateLimited, details)
	} else {
		s.SendLocalReply(c.status, body, accesslog.RateLimited, details)
	}
	return httpfilter.Stop
}

// EncodeHeaders implements httpfilter.Encoder: the response headers of a
// rate-limited reply, and the x-ratelimit headers of every response whose
// request a bucket decided.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.cfg
	if c == nil {
		return httpfilter.Continue
	}
	h := s.ResponseHeaders()
	if f.limited {
		c.responseHeaders.Apply(h, nil)
		f.retryAfter(s, h)
	}
	if b := f.res.bucket; b != nil && f.xRateLimitOn(c) {
		f.nums = strconv.AppendUint(f.nums[:0], b.Max(), 10)
		n := len(f.nums)
		f.nums = strconv.AppendUint(f.nums, b.Remaining(f.res.at), 10)
		m := len(f.nums)
		f.nums = strconv.AppendUint(f.nums, b.ResetSeconds(f.res.at), 10)
		// The header list keeps the strings: they must not share the
		// scratch buffer the next request rewrites.
		v := string(f.nums)
		h.Add(hLimit, v[:n])
		h.Add(hRemaining, v[n:m])
		h.Add(hReset, v[m:])
	}
	return httpfilter.Continue
}

// retryAfter adds the Retry-After of an enforced 429
// (enable_retry_after_header): the seconds until the bucket that refused
// the request has a token, at least 1. A Retry-After of
// response_headers_to_add stays; other statuses (a gRPC request's 200, a
// configured status) and a bucket of no tokens (which never has one) get
// none.
func (f *filter) retryAfter(s httpfilter.Stream, h router.HeaderEditor) {
	b := f.res.bucket
	if !f.cfg.retryAfter || b == nil || s.ResponseStatus() != statusTooManyRequests {
		return
	}
	if _, ok := h.Get(hRetryAfter); ok {
		return
	}
	f.nums = strconv.AppendUint(f.nums[:0], b.RetryAfterSeconds(f.res.at), 10)
	h.Set(hRetryAfter, string(f.nums))
}

// xRateLimitOn reports whether the x-ratelimit headers are on: the
// x_ratelimit_option of the descriptor whose bucket decided, else the
// filter's enable_x_ratelimit_headers, as Envoy's enableXRateLimitHeaders.
func (f *filter) xRateLimitOn(c *config) bool {
	if i := f.res.descriptor; i >= 0 && i < len(f.extras) {
		switch f.extras[i].xRateLimit {
		case routev3.RateLimit_DRAFT_VERSION_03:
			return true
		case routev3.RateLimit_OFF:
			return false
		}
	}
	return c.xRateLimit
}

// OnDestroy implements httpfilter.Destroyer: the filter goes back to the
// pool, without references to the request.
func (f *filter) OnDestroy() {
	f.cfg, f.res, f.limited = nil, result{}, false
	clear(f.entries)
	f.entries = f.entries[:0]
	clear(f.descriptors)
	f.descriptors = f.descriptors[:0]
	f.extras = f.extras[:0]
	clear(f.matched)
	f.matched = f.matched[:0]
	f.fc.pool.Put(f)
}

// populate makes the request's descriptors, as Envoy's populateDescriptors:
// from the filter's own rate_limits when it has some, else from the
// route's rate_limits of the filter's stage and, as vh_rate_limits and the
// route's include_vh_rate_limits say, its virtual host's. Entries with a
// disable_key are skipped.
func (f *filter) populate(s httpfilter.Stream, c *config) {
	if len(c.rateLimits) > 0 {
		f.describe(s, c.rateLimits, c)
		return
	}
	r := s.Route()
	if r == nil || r.Direct != nil || r.Redirect != nil {
		return
	}
	f.describe(s, r.RateLimits, c)
	vh := r.VirtualHost
	if vh == nil {
		return
	}
	switch {
	case r.IncludeVHRateLimits || c.vhRateLimits == ratelimitv3.VhRateLimitsOptions_INCLUDE:
		f.describe(s, vh.RateLimits, c)
	case c.vhRateLimits == ratelimitv3.VhRateLimitsOptions_OVERRIDE && len(r.RateLimits) == 0:
		f.describe(s, vh.RateLimits, c)
	}
}

// celStream gives the extension actions' expressions the stream's
// attributes.
type celStream struct{ s httpfilter.Stream }

// FillCEL implements router.CELAttributes.
func (c celStream) FillCEL(a *cel.Activation) { httpfilter.FillCEL(c.s, a) }

// describe appends the descriptors of rls that apply to the filter's
// stage. Each descriptor is a window of f.entries, which grows first and
// is cut into windows after, since appending may move it.
func (f *filter) describe(s httpfilter.Stream, rls []*router.RateLimit, c *config) {
	in := router.DescriptorInput{Request: s.Request(), RemoteIP: s.RemoteIP(), Cluster: s.ClusterName(),
		LocalCluster: c.localCluster, DynamicMetadata: s.DynamicMetadata(), Attributes: celStream{s}}
	if r := s.Route(); r != nil {
		in.RouteMetadata = r.Metadata
	}
	var entry *accesslog.Entry
	for _, rl := range rls {
		if rl.Stage != c.stage || rl.DisableKey != "" {
			continue
		}
		if in.Entry == nil && rl.Formats() {
			if entry == nil {
				entry = httpfilter.RequestEntry(s)
			}
			// Only formatted values read the runtime feature.
			in.Entry, in.FormatValues = entry, router.FormatDescriptorValues(c.runtime)
		}
		start := len(f.entries)
		var ok bool
		f.entries, ok = rl.AppendDescriptor(f.entries, &in)
		x := requestExtra{hits: 1, xRateLimit: rl.XRateLimit}
		if ok && rl.HitsAddend != nil {
			// As in Envoy, a hits_addend format without a valid
			// number drops the descriptor.
			if entry == nil {
				entry = httpfilter.RequestEntry(s)
			}
			x.negative = rl.HitsAddend.Negative
			if x.hits, ok = rl.HitsAddend.Value(entry); !ok {
				clear(f.entries[start:])
				f.entries = f.entries[:start]
			}
		}
		if ok {
			f.extras = append(f.extras, x)
			// The window's end is fixed now; its start is rebased below.
			f.descriptors = append(f.descriptors, f.entries[start:len(f.entries):len(f.entries)])
		}
	}
	// Appending may have moved f.entries: point every window at the
	// final array.
	off := 0
	for i, d := range f.descriptors {
		n := len(d)
		f.descriptors[i] = f.entries[off : off+n : off+n]
		off += n
	}
}
