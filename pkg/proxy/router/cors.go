package router

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// CorsPolicy is a compiled CorsPolicy of a virtual host or a route, which
// the CORS filter reads. Empty strings and nil values are unset: the
// filter then looks at the next, less specific, policy.
type CorsPolicy struct {
	// AllowOrigins match the Origin header (allow_origin_string_match).
	AllowOrigins []StringMatcher
	// The values of the access-control-allow-methods, -allow-headers,
	// -expose-headers and -max-age headers.
	AllowMethods, AllowHeaders, ExposeHeaders, MaxAge string
	// AllowCredentials, AllowPrivateNetworkAccess and
	// ForwardNotMatchingPreflights are nil when unset.
	AllowCredentials, AllowPrivateNetworkAccess, ForwardNotMatchingPreflights *bool
	// FilterEnabled is the share of requests the policy applies to; nil
	// means all of them. ShadowEnabled is the share it is evaluated for
	// (stats only) without being enforced; nil means none.
	FilterEnabled, ShadowEnabled *runtime.Fraction
}

// CompileCorsPolicy compiles a route or virtual host CorsPolicy; errors
// name the field below it. The CORS filter compiles its per-route form
// (envoy.extensions.filters.http.cors.v3.CorsPolicy) with it too.
func CompileCorsPolicy(p *routev3.CorsPolicy) (*CorsPolicy, error) {
	c := &CorsPolicy{
		AllowMethods:  p.GetAllowMethods(),
		AllowHeaders:  p.GetAllowHeaders(),
		ExposeHeaders: p.GetExposeHeaders(),
		MaxAge:        p.GetMaxAge(),
	}
	for i, m := range p.GetAllowOriginStringMatch() {
		sm, err := CompileStringMatcher(m)
		if err != nil {
			return nil, fmt.Errorf("allow_origin_string_match[%d].%w", i, err)
		}
		c.AllowOrigins = append(c.AllowOrigins, sm)
	}
	c.AllowCredentials = optionalBool(p.GetAllowCredentials() != nil, p.GetAllowCredentials().GetValue())
	c.AllowPrivateNetworkAccess = optionalBool(p.GetAllowPrivateNetworkAccess() != nil, p.GetAllowPrivateNetworkAccess().GetValue())
	c.ForwardNotMatchingPreflights = optionalBool(p.GetForwardNotMatchingPreflights() != nil, p.GetForwardNotMatchingPreflights().GetValue())
	var err error
	if c.FilterEnabled, err = runtimeFraction(p.GetFilterEnabled()); err != nil {
		return nil, fmt.Errorf("filter_enabled.default_value.%w", err)
	}
	if c.ShadowEnabled, err = runtimeFraction(p.GetShadowEnabled()); err != nil {
		return nil, fmt.Errorf("shadow_enabled.default_value.%w", err)
	}
	return c, nil
}

// optionalBool is v when set, nil otherwise.
func optionalBool(set, v bool) *bool {
	if !set {
		return nil
	}
	return &v
}

// runtimeFraction compiles a RuntimeFractionalPercent; nil when unset.
func runtimeFraction(p *corev3.RuntimeFractionalPercent) (*runtime.Fraction, error) {
	if p == nil {
		return nil, nil
	}
	f, err := runtime.FractionOf(p.GetRuntimeKey(), p.GetDefaultValue())
	if err != nil {
		return nil, err
	}
	return &f, nil
}
