// Package localratelimit is the local rate limit HTTP filter
// (envoy.filters.http.local_ratelimit): token buckets kept by the proxy
// itself, one for the filter (or one per downstream connection), and one
// per configured descriptor, which the route's rate_limits actions (or the
// filter's own rate_limits) make from each request. A request without a
// token gets 429 (or the configured status) when the filter is enforced.
// A route can have buckets of its own (typed_per_filter_config with the
// same message). Wildcard descriptors (an entry with an empty value) keep
// a bucket per value tuple, the max_dynamic_descriptors most recently
// used; local_cluster_rate_limit shares the buckets evenly between the
// local cluster's hosts. Its stats are Envoy's:
// <stat_prefix>.http_local_rate_limit.{enabled,enforced,rate_limited,ok}.
package localratelimit

import (
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tokenbucket"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.local_ratelimit"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, err := compile(config, ctx, false)
	if err != nil {
		return nil, err
	}
	fc := &filterConfig{name: ctx.Name, cfg: c}
	fc.pool.New = func() any { return &filter{fc: fc} }
	return fc, nil
}

// CompileRoute implements httpfilter.RouteFactory: a route's
// LocalRateLimit, with buckets and stats of its own; it needs a
// token_bucket, as in Envoy.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	return compile(config, ctx, true)
}

// config is a compiled LocalRateLimit, of the filter or of a route.
type config struct {
	stats limitStats
	// status is the status of a rate-limited request: the configured
	// one when it is an error (400 and above), else 429.
	status int
	// grpcExhausted: gRPC requests get RESOURCE_EXHAUSTED rather than
	// the status's gRPC equivalent.
	grpcExhausted bool
	// enabled and enforced are nil when unset: the filter then neither
	// runs nor enforces, as in Envoy.
	enabled, enforced *runtime.Fraction
	runtime           httpfilter.Runtime
	responseHeaders   router.HeaderMutation
	requestHeaders    router.HeaderMutation
	xRateLimit        bool
	// spec makes the limiters; shared is the one of the filter (or the
	// route), and perConnection makes one per downstream connection
	// instead, made by newConnLimiter.
	spec           limiterSpec
	shared         *limiter
	perConnection  bool
	newConnLimiter func() any
	// The descriptors of a request come from rateLimits (the filter's
	// own) when set, else from the route's rate_limits of stage, as
	// vhRateLimits says for the virtual host's.
	rateLimits   []*router.RateLimit
	stage        uint32
	vhRateLimits ratelimitv3.VhRateLimitsOptions
	// localCluster is source_cluster's value.
	localCluster string
	// hasDescriptors: descriptors are configured (exact or wildcard),
	// so the request's are worth making.
	hasDescriptors bool
	// retryAfter: an enforced 429 gets a Retry-After header
	// (enable_retry_after_header).
	retryAfter bool
}

// LocalCluster is implemented by the httpfilter.Services of a server, for
// local_cluster_rate_limit: the local cluster
// (cluster_manager.local_cluster_name), between whose hosts the buckets
// are shared.
type LocalCluster interface {
	// LocalClusterMembers returns the local cluster's name ("" when the
	// bootstrap names none) and its membership_total gauge, the number
	// of its hosts (nil when there is no such cluster).
	LocalClusterMembers() (name string, members *stats.Gauge)
}

// localClusterMembers finds the local cluster's host count, with Envoy's
// errors when there is no local cluster or the buckets are per
// connection.
func localClusterMembers(ctx httpfilter.Context, perConnection bool) (*stats.Gauge, error) {
	if perConnection {
		return nil, errors.New("local_cluster_rate_limit is set and local_rate_limit_per_downstream_connection is set to true")
	}
	lc, ok := ctx.Services.(LocalCluster)
	if !ok {
		return nil, errors.New("local_cluster_rate_limit is set but no local cluster name is present")
	}
	name, members := lc.LocalClusterMembers()
	switch {
	case name == "":
		return nil, errors.New("local_cluster_rate_limit is set but no local cluster name is present (cluster_manager.local_cluster_name)")
	case members == nil:
		return nil, fmt.Errorf("local_cluster_rate_limit is set but no local cluster is present (no cluster %q)", name)
	}
	return members, nil
}

// limitStats are Envoy's stats, <stat_prefix>.http_local_rate_limit.*.
type limitStats struct {
	enabled, enforced, rateLimited, ok *stats.Counter
}

// statusTooManyRequests is the default status of a rate-limited request.
const statusTooManyRequests = 429

// compile compiles a LocalRateLimit; perRoute requires its token bucket.
func compile(m proto.Message, ctx httpfilter.Context, perRoute bool) (*config, error) {
	p, ok := m.(*lrlv3.LocalRateLimit)
	if !ok {
		return nil, errors.New("not a LocalRateLimit configuration")
	}
	if p.GetStatPrefix() == "" {
		return nil, errors.New("stat_prefix: must be set")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	if perRoute && p.GetTokenBucket() == nil {
		// Envoy's words.
		return nil, errors.New("token_bucket: local rate limit token bucket must be set for per filter configs")
	}
	c := &config{
		status:        statusTooManyRequests,
		grpcExhausted: p.GetRateLimitedAsResourceExhausted(),
		runtime:       ctx.Runtime,
		xRateLimit:    p.GetEnableXRatelimitHeaders() == ratelimitv3.XRateLimitHeadersRFCVersion_DRAFT_VERSION_03,
		perConnection: p.GetLocalRateLimitPerDownstreamConnection(),
		stage:         p.GetStage(),
		vhRateLimits:  p.GetVhRateLimits(),
		localCluster:  ctx.ServiceCluster,
		retryAfter:    p.GetEnableRetryAfterHeader(),
	}
	if code := int(p.GetStatus().GetCode()); code >= 400 {
		c.status = code
	}
	var err error
	if c.enabled, err = fraction(p.GetFilterEnabled()); err != nil {
		return nil, fmt.Errorf("filter_enabled.default_value.%w", err)
	}
	if c.enforced, err = fraction(p.GetFilterEnforced()); err != nil {
		return nil, fmt.Errorf("filter_enforced.default_value.%w", err)
	}
	if c.responseHeaders, err = router.CompileHeaderMutation(p.GetResponseHeadersToAdd(), nil, "response_headers_to_add", ""); err != nil {
		return nil, err
	}
	if c.requestHeaders, err = router.CompileHeaderMutation(p.GetRequestHeadersToAddWhenNotEnforced(), nil, "request_headers_to_add_when_not_enforced", ""); err != nil {
		return nil, err
	}
	c.spec.alwaysConsumeDefault = true
	if v := p.GetAlwaysConsumeDefaultTokenBucket(); v != nil {
		c.spec.alwaysConsumeDefault = v.GetValue()
	}
	if tb := p.GetTokenBucket(); tb != nil {
		if c.spec.bucket, err = tokenbucket.Compile(tb); err != nil {
			return nil, fmt.Errorf("token_bucket.%w", err)
		}
	}
	if c.spec.descriptors, c.spec.wildcards, err = compileDescriptors(p.GetDescriptors()); err != nil {
		return nil, fmt.Errorf("descriptors%w", err)
	}
	c.hasDescriptors = len(p.GetDescriptors()) > 0
	c.spec.maxDynamic = defaultMaxDynamic
	if v := p.GetMaxDynamicDescriptors(); v != nil {
		if v.GetValue() < 1 {
			return nil, errors.New("max_dynamic_descriptors: must be at least 1")
		}
		c.spec.maxDynamic = int(v.GetValue())
	}
	if p.GetLocalClusterRateLimit() != nil {
		if c.spec.members, err = localClusterMembers(ctx, c.perConnection); err != nil {
			return nil, fmt.Errorf("local_cluster_rate_limit: %w", err)
		}
	}
	for i, rl := range p.GetRateLimits() {
		// Only the global rate limit filter sends stream-done
		// descriptors.
		if rl.GetApplyOnStreamDone() {
			return nil, fmt.Errorf("rate_limits[%d].apply_on_stream_done: not supported by the local rate limit filter, as in Envoy", i)
		}
		r, err := router.CompileRateLimit(rl)
		if err != nil {
			return nil, fmt.Errorf("rate_limits[%d].%w", i, err)
		}
		c.rateLimits = append(c.rateLimits, r)
	}
	now := ctx.Now
	if now == nil {
		now = time.Now
	}
	if c.perConnection {
		c.newConnLimiter = func() any { return c.spec.newLimiter(now) }
	} else {
		c.shared = c.spec.newLimiter(now)
	}
	sc := ctx.Stats.Scope(p.GetStatPrefix() + ".http_local_rate_limit.")
	c.stats = limitStats{
		enabled:     sc.Counter("enabled"),
		enforced:    sc.Counter("enforced"),
		rateLimited: sc.Counter("rate_limited"),
		ok:          sc.Counter("ok"),
	}
	return c, nil
}

// fraction compiles an optional RuntimeFractionalPercent; nil when unset.
func fraction(p *corev3.RuntimeFractionalPercent) (*runtime.Fraction, error) {
	if p == nil {
		return nil, nil
	}
	f, err := runtime.FractionOf(p.GetRuntimeKey(), p.GetDefaultValue())
	if err != nil {
		return nil, err
	}
	return &f, nil
}
