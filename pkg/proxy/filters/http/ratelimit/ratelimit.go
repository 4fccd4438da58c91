// Package ratelimit is the global rate limit HTTP filter
// (envoy.filters.http.ratelimit): before a request is routed, the route's
// rate_limits actions (or the filter's own, or the route's
// RateLimitPerRoute ones) turn it into descriptors, and the filter asks
// the rate limit service (envoy.service.ratelimit.v3.RateLimitService)
// whether any is over its limit. OVER_LIMIT is answered with 429 (or
// rate_limited_status) and x-envoy-ratelimited; a service that fails or
// does not answer within the timeout lets the request through, or, with
// failure_mode_deny, is answered with status_on_error (500). Only the
// request waits: its own goroutine holds it, bounded by the timeout. The
// apply_on_stream_done entries (of a route, a virtual host or a
// RateLimitPerRoute) are sent once the stream has ended, and nothing
// waits for their answer.
//
// Its stats are Envoy's, per route cluster:
// cluster.<route cluster>.ratelimit[.<stat_prefix>].{ok,over_limit,error,
// failure_mode_allowed}.
package ratelimit

import (
	"errors"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.ratelimit"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := config.(*rlv3.RateLimit)
	if !ok {
		return nil, errors.New("not a RateLimit configuration")
	}
	return compile(p, ctx)
}

// CompileRoute implements httpfilter.RouteFactory: a RateLimitPerRoute.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := config.(*rlv3.RateLimitPerRoute)
	if !ok {
		return nil, errors.New("not a RateLimitPerRoute configuration")
	}
	return compileRoute(p)
}
