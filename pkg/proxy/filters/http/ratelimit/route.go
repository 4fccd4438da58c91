package ratelimit

import (
	"fmt"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// routeConfig is a compiled RateLimitPerRoute.
type routeConfig struct {
	vhRateLimits rlv3.RateLimitPerRoute_VhRateLimitsOptions
	// rateLimits, when set, replace the route's and the filter's.
	rateLimits []*router.RateLimit
	// domain, when set, replaces the filter's.
	domain string
}

// compileRoute compiles a RateLimitPerRoute. override_option is refused
// unless DEFAULT: Envoy reads vh_rate_limits only.
func compileRoute(p *rlv3.RateLimitPerRoute) (*routeConfig, error) {
	if p.GetOverrideOption() != rlv3.RateLimitPerRoute_DEFAULT {
		return nil, fmt.Errorf("override_option: only DEFAULT is supported by Outrigger, got %s", p.GetOverrideOption())
	}
	rc := &routeConfig{vhRateLimits: p.GetVhRateLimits(), domain: p.GetDomain()}
	var err error
	if rc.rateLimits, err = compileOwnRateLimits(p.GetRateLimits(), true); err != nil {
		return nil, err
	}
	return rc, nil
}
