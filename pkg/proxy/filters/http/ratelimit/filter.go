package ratelimit

import (
	"context"
	"math/rand/v2"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ratelimitservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// Envoy's %RESPONSE_CODE_DETAILS% of the filter's local replies.
const (
	detailsRateLimited = "request_rate_limited"
	detailsError       = "rate_limiter_error"
)

// grpcResourceExhausted is the gRPC status of
// rate_limited_as_resource_exhausted.
const grpcResourceExhausted = 8

// filter is one request's rate limit filter, recycled once the request
// ends.
type filter struct {
	c *config
	// responseHeaders go on the response: the service's, and the
	// x-envoy-ratelimited and x-ratelimit headers. limited records that
	// the filter answered 429 itself.
	responseHeaders [][2]string
	limited         bool
	// xRateLimitAsked records that a descriptor's x_ratelimit_option
	// turns the x-ratelimit headers on.
	xRateLimitAsked bool
	// stream, route, rc and cluster are kept from DecodeHeaders for the
	// apply_on_stream_done entries, which OnDestroy sends with the same
	// route and per-route configuration, as Envoy does; stream is nil
	// when the request never got that far (or its call was cut short).
	stream  httpfilter.Stream
	route   *router.Route
	rc      *routeConfig
	cluster string
	// Scratch space for the request's descriptors: entries holds them
	// all, bounds the end of each in entries, extras their limit
	// override and hits_addend.
	entries []router.DescriptorEntry
	bounds  []int
	extras  []descriptorExtra
	descs   []ratelimitservice.Descriptor
}

// descriptorExtra is what a descriptor carries besides its entries.
type descriptorExtra struct {
	limit         *router.LimitOverride
	hitsAddend    uint64
	hasHitsAddend bool
	negative      bool
	xRateLimit    routev3.RateLimit_XRateLimitOption
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder, as Envoy's decodeHeaders:
// a routed request with descriptors waits for the service's answer (up to
// the timeout), and goes on or is answered as the answer says.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.c
	if !c.enabled.Enabled(c.runtime, rand.Uint64()) {
		return httpfilter.Continue
	}
	if c.requestType != requestsBoth {
		v, _ := s.RequestHeaders().Get("x-envoy-internal")
		if internal := v == "true"; internal != (c.requestType == requestsInternal) {
			return httpfilter.Continue
		}
	}
	r := s.Route()
	if r == nil || r.Direct != nil || r.Redirect != nil {
		return httpfilter.Continue
	}
	cluster := s.ClusterName()
	if cluster == "" {
		return httpfilter.Continue
	}
	rc, _ := s.RouteConfig(c.name).(*routeConfig)
	f.stream, f.route, f.rc, f.cluster = s, r, rc, cluster
	f.populate(false)
	if len(f.descs) == 0 {
		return httpfilter.Continue
	}
	// The request message is made here, so that the call's goroutine
	// reads nothing of the filter, which a cut-short wait recycles.
	req := ratelimitservice.Request(f.domain(), f.descs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var resp *ratelimitservice.Response
	go func() {
		defer close(done)
		resp = c.client.Limit(ctx, req)
	}()
	if !s.Wait(done) {
		// The client went away or the stream timed out: the call is
		// cancelled and its goroutine ends with it, and, as in Envoy,
		// no call is made when the stream ends.
		f.stream = nil
		return httpfilter.Stop
	}
	return f.complete(s, resp, cluster)
}

// complete applies the service's answer, as Envoy's complete.
func (f *filter) complete(s httpfilter.Stream, resp *ratelimitservice.Response, cluster string) httpfilter.Status {
	c := f.c
	cs := c.clusterStats(cluster)
	if md := resp.DynamicMetadata; md != nil && len(md.GetFields()) > 0 {
		s.SetDynamicMetadata(c.metadataNamespace, md)
	}
	f.responseHeaders = resp.ResponseHeaders
	switch resp.Status {
	case ratelimitservice.OK:
		cs.ok.Inc()
	case ratelimitservice.Error:
		cs.error.Inc()
	case ratelimitservice.OverLimit:
		cs.overLimit.Inc()
		if c.xEnvoyRateLimited {
			f.responseHeaders = append(f.responseHeaders, [2]string{"x-envoy-ratelimited", "true"})
		}
	}
	if c.xRateLimit || f.xRateLimitAsked {
		f.responseHeaders = append(f.responseHeaders, ratelimitservice.XRateLimitHeaders(resp.Statuses, f.xRateLimitOn)...)
	}
	switch {
	case resp.Status == ratelimitservice.OverLimit && c.enforced.Enabled(c.runtime, rand.Uint64()):
		f.limited = true
		if c.retryAfter && c.rateLimitedStatus == 429 {
			f.responseHeaders = appendRetryAfter(f.responseHeaders, resp.Statuses)
		}
		if c.grpcExhausted {
			s.SendGrpcLocalReply(c.rateLimitedStatus, grpcResourceExhausted, resp.Body, accesslog.RateLimited, detailsRateLimited)
		} else {
			s.SendLocalReply(c.rateLimitedStatus, resp.Body, accesslog.RateLimited, detailsRateLimited)
		}
		return httpfilter.Stop
	case resp.Status == ratelimitservice.Error && c.denyOnFailure():
		s.SendLocalReply(c.statusOnError, resp.Body, accesslog.RateLimitServiceError, detailsError)
		return httpfilter.Stop
	case resp.Status == ratelimitservice.Error:
		cs.failureModeAllowed.Inc()
	}
	h := s.RequestHeaders()
	for _, kv := range resp.RequestHeaders {
		h.Add(kv[0], kv[1])
	}
	return httpfilter.Continue
}

// xRateLimitOn reports whether the x-ratelimit headers are on for the
// descriptor of status i: its entry's x_ratelimit_option, else the
// filter's enable_x_ratelimit_headers (also for a status the request has
// no descriptor for), as Envoy's enableXRateLimitHeaders.
func (f *filter) xRateLimitOn(i int) bool {
	if i >= len(f.extras) {
		return f.c.xRateLimit
	}
	switch f.extras[i].xRateLimit {
	case routev3.RateLimit_DRAFT_VERSION_03:
		return true
	case routev3.RateLimit_OFF:
		return false
	}
	return f.c.xRateLimit
}

// denyOnFailure reports whether a failed call denies the request:
// failure_mode_deny_percent decides when set, else failure_mode_deny.
func (c *config) denyOnFailure() bool {
	if c.failureDenyShare != nil {
		return c.failureDenyShare.Enabled(c.runtime, rand.Uint64())
	}
	return c.failureModeDeny
}

// domain is the call's domain: the RateLimitPerRoute's, else the
// filter's.
func (f *filter) domain() string {
	if f.rc != nil && f.rc.domain != "" {
		return f.rc.domain
	}
	return f.c.domain
}

// FillCEL implements router.CELAttributes: the stream's attributes for
// the extension actions' expressions.
func (f *filter) FillCEL(a *cel.Activation) { httpfilter.FillCEL(f.stream, a) }

// populate makes the request's descriptors, as Envoy's
// populateRateLimitDescriptors: the RateLimitPerRoute's rate_limits when
// it has some, else the filter's own, else the route's of the filter's
// stage and, as include_vh_rate_limits or the per-route vh_rate_limits
// say, the virtual host's (by default only when the route has none).
// onDone selects the apply_on_stream_done entries (the stream has ended)
// or the others (the request is being decided).
func (f *filter) populate(onDone bool) {
	c, s, r, rc := f.c, f.stream, f.route, f.rc
	in := router.DescriptorInput{Request: s.Request(), RemoteIP: s.RemoteIP(), Cluster: f.cluster,
		LocalCluster: c.localCluster, DynamicMetadata: s.DynamicMetadata(), RouteMetadata: r.Metadata, Attributes: f}
	switch {
	case rc != nil && len(rc.rateLimits) > 0:
		f.describe(rc.rateLimits, &in, false, onDone)
	case len(c.rateLimits) > 0:
		// The filter's own entries have no apply_on_stream_done
		// (compile refuses it).
		if !onDone {
			f.describe(c.rateLimits, &in, false, false)
		}
	default:
		f.describe(r.RateLimits, &in, true, onDone)
		vh := r.VirtualHost
		if vh == nil {
			break
		}
		opt := rlv3.RateLimitPerRoute_OVERRIDE
		if rc != nil {
			opt = rc.vhRateLimits
		}
		switch {
		case r.IncludeVHRateLimits || opt == rlv3.RateLimitPerRoute_INCLUDE:
			f.describe(vh.RateLimits, &in, true, onDone)
		case opt == rlv3.RateLimitPerRoute_OVERRIDE && len(r.RateLimits) == 0:
			f.describe(vh.RateLimits, &in, true, onDone)
		}
	}
	start := 0
	for i, end := range f.bounds {
		x := f.extras[i]
		f.descs = append(f.descs, ratelimitservice.Descriptor{Entries: f.entries[start:end:end], Limit: x.limit,
			HitsAddend: x.hitsAddend, HasHitsAddend: x.hasHitsAddend, IsNegativeHits: x.negative})
		start = end
	}
}

// describe appends the descriptors of rls whose apply_on_stream_done is
// onDone; policy selects the entries of the filter's stage whose
// disable_key (if any) is enabled, and applies their limit overrides. An
// entry whose hits_addend format gives no valid number adds no
// descriptor, as in Envoy.
func (f *filter) describe(rls []*router.RateLimit, in *router.DescriptorInput, policy, onDone bool) {
	c := f.c
	var entry *accesslog.Entry
	for _, rl := range rls {
		if rl.ApplyOnStreamDone != onDone {
			continue
		}
		if policy {
			if rl.Stage != c.stage {
				continue
			}
			if rl.DisableKey != "" {
				key := runtime.Fraction{Key: "ratelimit." + rl.DisableKey + ".http_filter_enabled", Numerator: 100, Denominator: 100}
				if !key.Enabled(c.runtime, rand.Uint64()) {
					continue
				}
			}
		}
		if in.Entry == nil && rl.Formats() {
			if entry == nil {
				entry = httpfilter.RequestEntry(f.stream)
			}
			// Only formatted values read the runtime feature.
			in.Entry, in.FormatValues = entry, router.FormatDescriptorValues(c.runtime)
		}
		start := len(f.entries)
		var ok bool
		if f.entries, ok = rl.AppendDescriptor(f.entries, in); !ok {
			continue
		}
		x := descriptorExtra{xRateLimit: rl.XRateLimit}
		if rl.XRateLimit == routev3.RateLimit_DRAFT_VERSION_03 {
			f.xRateLimitAsked = true
		}
		if rl.HitsAddend != nil {
			if entry == nil {
				entry = httpfilter.RequestEntry(f.stream)
			}
			if x.hitsAddend, ok = rl.HitsAddend.Value(entry); !ok {
				clear(f.entries[start:])
				f.entries = f.entries[:start]
				continue
			}
			x.hasHitsAddend, x.negative = true, rl.HitsAddend.Negative
		}
		if l, ok := rl.Limit(in.DynamicMetadata); ok {
			x.limit = &l
		}
		f.bounds = append(f.bounds, len(f.entries))
		f.extras = append(f.extras, x)
	}
}

// EncodeHeaders implements httpfilter.Encoder: the service's headers, and
// x-envoy-ratelimited and the x-ratelimit headers, go on the response; a
// rate-limited reply also gets response_headers_to_add, and the service's
// content-type replaces its own.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if len(f.responseHeaders) == 0 && !f.limited {
		return httpfilter.Continue
	}
	h := s.ResponseHeaders()
	if f.limited {
		for _, kv := range f.responseHeaders {
			if kv[0] == "content-type" {
				h.Del("content-type")
				break
			}
		}
	}
	for _, kv := range f.responseHeaders {
		h.Add(kv[0], kv[1])
	}
	if f.limited {
		f.c.responseHeaders.Apply(h, nil)
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: the apply_on_stream_done
// entries are sent, and the filter goes back to its pool, without
// references to the request.
func (f *filter) OnDestroy() {
	c := f.c
	if f.stream != nil {
		f.streamDone()
	}
	f.c, f.responseHeaders, f.limited, f.xRateLimitAsked = nil, nil, false, false
	f.stream, f.route, f.rc, f.cluster = nil, nil, nil, ""
	f.reset()
	c.pool.Put(f)
}

// reset empties the descriptor scratch space.
func (f *filter) reset() {
	clear(f.entries)
	f.entries = f.entries[:0]
	f.bounds = f.bounds[:0]
	clear(f.extras)
	f.extras = f.extras[:0]
	clear(f.descs)
	f.descs = f.descs[:0]
}

// streamDone makes the call of the apply_on_stream_done entries, as
// Envoy's onDestroy: with what the stream holds now (its dynamic
// metadata, the body bytes received), fire and forget. The stream has
// ended, so nothing waits for the answer, which only counts the hits;
// the call is bounded by the filter's timeout.
func (f *filter) streamDone() {
	f.reset()
	f.populate(true)
	if len(f.descs) == 0 {
		return
	}
	req := ratelimitservice.Request(f.domain(), f.descs)
	client := f.c.client
	go client.Limit(context.Background(), req)
}
