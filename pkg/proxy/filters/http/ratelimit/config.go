package ratelimit

import (
	"errors"
	"fmt"
	"io"
	"sync"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ratelimitservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// requestType is request_type: the requests the filter applies to.
type requestType uint8

const (
	requestsBoth requestType = iota
	requestsInternal
	requestsExternal
)

// defaultMetadataNamespace is where the service's dynamic_metadata goes
// when metadata_namespace is not set.
const defaultMetadataNamespace = "envoy.filters.http.ratelimit"

// config is a compiled RateLimit.
type config struct {
	// name is the name the filter is configured with, the key of its
	// per-route configuration.
	name        string
	domain      string
	stage       uint32
	requestType requestType
	client      *ratelimitservice.Client
	// failureModeDeny answers a request whose call failed with
	// statusOnError; failureDenyShare, when set, decides it per request
	// instead (failure_mode_deny_percent).
	failureModeDeny  bool
	failureDenyShare *runtime.Fraction
	statusOnError    int
	// rateLimitedStatus is the status of a rate-limited request;
	// grpcExhausted answers gRPC requests with RESOURCE_EXHAUSTED.
	rateLimitedStatus int
	grpcExhausted     bool
	// xRateLimit adds the draft-03 x-ratelimit headers;
	// xEnvoyRateLimited adds x-envoy-ratelimited to over-limit answers.
	xRateLimit, xEnvoyRateLimited bool
	// retryAfter adds retry-after to 429 answers
	// (enable_retry_after_header).
	retryAfter bool
	// responseHeaders go on rate-limited replies.
	responseHeaders router.HeaderMutation
	// enabled and enforced are filter_enabled and filter_enforced, or
	// Envoy's runtime keys at 100% when unset.
	enabled, enforced runtime.Fraction
	runtime           httpfilter.Runtime
	// rateLimits are the filter's own rate_limits, which replace the
	// route's.
	rateLimits        []*router.RateLimit
	metadataNamespace string
	localCluster      string

	// store and statPrefix name the per-cluster counters
	// (cluster.<name>.<statPrefix>ok), made on first use.
	store      *stats.Store
	statPrefix string
	clusters   sync.Map
	pool       sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *config) NewFilter() httpfilter.Filter {
	f := c.pool.Get().(*filter)
	f.c = c
	return f
}

// Close implements io.Closer: the service's channel.
func (c *config) Close() error { return c.client.Close() }

var _ io.Closer = (*config)(nil)

// compile checks and compiles a RateLimit. Fields Outrigger does not
// implement are refused with their path, by the support table.
func compile(p *rlv3.RateLimit, ctx httpfilter.Context) (*config, error) {
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	if p.GetDomain() == "" {
		return nil, errors.New("domain: must be set")
	}
	c := &config{
		name:              ctx.Name,
		domain:            p.GetDomain(),
		stage:             p.GetStage(),
		failureModeDeny:   p.GetFailureModeDeny(),
		statusOnError:     500,
		rateLimitedStatus: 429,
		grpcExhausted:     p.GetRateLimitedAsResourceExhausted(),
		xRateLimit:        p.GetEnableXRatelimitHeaders() == rlv3.RateLimit_DRAFT_VERSION_03,
		xEnvoyRateLimited: !p.GetDisableXEnvoyRatelimitedHeader(),
		retryAfter:        p.GetEnableRetryAfterHeader(),
		enabled:           runtime.Fraction{Key: "ratelimit.http_filter_enabled", Numerator: 100, Denominator: 100},
		enforced:          runtime.Fraction{Key: "ratelimit.http_filter_enforcing", Numerator: 100, Denominator: 100},
		runtime:           ctx.Runtime,
		metadataNamespace: defaultMetadataNamespace,
		localCluster:      ctx.ServiceCluster,
		store:             ctx.Stats,
		statPrefix:        "ratelimit.",
	}
	if p.GetStage() > 10 {
		return nil, errors.New("stage: must be at most 10")
	}
	switch p.GetRequestType() {
	case "", "both":
	case "internal":
		c.requestType = requestsInternal
	case "external":
		c.requestType = requestsExternal
	default:
		return nil, fmt.Errorf("request_type: %q is not one of internal, external or both", p.GetRequestType())
	}
	if code := int(p.GetRateLimitedStatus().GetCode()); code >= 400 {
		c.rateLimitedStatus = code
	}
	if code := int(p.GetStatusOnError().GetCode()); code >= 200 && code <= 511 {
		c.statusOnError = code
	}
	if ns := p.GetMetadataNamespace(); ns != "" {
		c.metadataNamespace = ns
	}
	if sp := p.GetStatPrefix(); sp != "" {
		c.statPrefix += sp + "."
	}
	var err error
	if c.responseHeaders, err = router.CompileHeaderMutation(p.GetResponseHeadersToAdd(), nil, "response_headers_to_add", ""); err != nil {
		return nil, err
	}
	if fe := p.GetFilterEnabled(); fe != nil {
		if c.enabled, err = runtime.FractionOf(fe.GetRuntimeKey(), fe.GetDefaultValue()); err != nil {
			return nil, fmt.Errorf("filter_enabled.default_value.%w", err)
		}
	}
	if fe := p.GetFilterEnforced(); fe != nil {
		if c.enforced, err = runtime.FractionOf(fe.GetRuntimeKey(), fe.GetDefaultValue()); err != nil {
			return nil, fmt.Errorf("filter_enforced.default_value.%w", err)
		}
	}
	if fd := p.GetFailureModeDenyPercent(); fd != nil {
		f, err := runtime.FractionOf(fd.GetRuntimeKey(), fd.GetDefaultValue())
		if err != nil {
			return nil, fmt.Errorf("failure_mode_deny_percent.default_value.%w", err)
		}
		c.failureDenyShare = &f
	}
	if c.rateLimits, err = compileOwnRateLimits(p.GetRateLimits(), false); err != nil {
		return nil, err
	}
	var open ratelimitservice.Opener
	if ctx.Services != nil {
		open = ctx.Services.OpenGRPC
	}
	if c.client, err = ratelimitservice.Open(p.GetRateLimitService(), p.GetTimeout(), open); err != nil {
		return nil, err
	}
	c.pool.New = func() any { return &filter{} }
	return c, nil
}

// compileOwnRateLimits compiles the rate_limits of the filter or (with
// perRoute) of a RateLimitPerRoute. As in Envoy, they have no stage,
// disable_key, limit or dynamic_metadata action: those are refused by
// path. apply_on_stream_done is taken only per route: Envoy's filter
// reads its own entries the same way at the request and at the stream's
// end.
func compileOwnRateLimits(rls []*routev3.RateLimit, perRoute bool) ([]*router.RateLimit, error) {
	var out []*router.RateLimit
	for i, rl := range rls {
		switch {
		case rl.GetApplyOnStreamDone() && !perRoute:
			return nil, fmt.Errorf("rate_limits[%d].apply_on_stream_done: supported only in RateLimitPerRoute.rate_limits", i)
		case rl.GetStage() != nil:
			return nil, fmt.Errorf("rate_limits[%d].stage: not supported in a filter's own rate_limits, as in Envoy", i)
		case rl.GetDisableKey() != "":
			return nil, fmt.Errorf("rate_limits[%d].disable_key: not supported in a filter's own rate_limits, as in Envoy", i)
		case rl.GetLimit() != nil:
			return nil, fmt.Errorf("rate_limits[%d].limit: not supported in a filter's own rate_limits, as in Envoy", i)
		}
		for j, a := range rl.GetActions() {
			//lint:ignore SA1019 Envoy still reads the deprecated dynamic_metadata action
			if a.GetDynamicMetadata() != nil {
				return nil, fmt.Errorf("rate_limits[%d].actions[%d].dynamic_metadata: not supported here (use metadata with source DYNAMIC)", i, j)
			}
		}
		r, err := router.CompileRateLimit(rl)
		if err != nil {
			return nil, fmt.Errorf("rate_limits[%d].%w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}
