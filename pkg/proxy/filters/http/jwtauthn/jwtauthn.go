// Package jwtauthn is the JWT authentication HTTP filter
// (envoy.filters.http.jwt_authn): requests carry JSON Web Tokens (in the
// Authorization header, other headers, query parameters or cookies) that
// the filter verifies against its providers: issuer, audiences, time with
// a clock skew, and the JWS signature with the provider's JWKS, local or
// fetched over a cluster and cached. Rules (route matches) or a route's
// PerRouteConfig choose the requirement a request must meet (a provider,
// any or all of several, or tokens optional); a request that fails is
// answered 401 (403 for audiences) with Envoy's body, WWW-Authenticate
// header and response code details jwt_authn_access_denied{...}.
// Verified tokens can be forwarded, their payload passed in a header or
// the dynamic metadata, and claims copied to headers. Stats are Envoy's,
// under http.<stat_prefix>.jwt_authn.<filter stat_prefix>.
package jwtauthn

import (
	"errors"
	"fmt"
	"io"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.jwt_authn"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
	_ io.Closer               = (*filterConfig)(nil)
)

// rule is a compiled RequirementRule.
type rule struct {
	match *router.Match
	// v is nil when the rule requires nothing.
	v verifier
}

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(m proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := m.(*jwtv3.JwtAuthentication)
	if !ok {
		return nil, errors.New("not a JwtAuthentication configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	c := &filterConfig{
		name:         ctx.Name,
		now:          ctx.Now,
		bypassCORS:   p.GetBypassCorsPreflight(),
		stripFailure: p.GetStripFailureResponse(),
		providers:    map[string]*provider{},
		requirements: map[string]verifier{},
		all:          &extractor{},
	}
	if c.now == nil {
		return nil, errors.New("no clock")
	}
	c.stats = newStats(ctx.Stats, ctx.StatPrefix, p.GetStatPrefix())
	for _, name := range sortedKeys(p.GetProviders()) {
		pr, err := compileProvider(name, p.GetProviders()[name], ctx)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("providers[%q].%w", name, err)
		}
		if pr.remote != nil {
			pr.remote.success, pr.remote.failed = c.stats.jwksFetchSuccess, c.stats.jwksFetchFailed
			if pr.remote.start != nil {
				pr.remote.start()
			}
		}
		c.providers[name] = pr
		c.order = append(c.order, pr)
		for _, ch := range pr.claimToHeaders {
			c.claimHeaders = append(c.claimHeaders, ch.header)
		}
		if pr.forwardPayloadHeader != "" {
			c.payloadHeaders = append(c.payloadHeaders, pr.forwardPayloadHeader)
		}
		addLocations(c.all, p.GetProviders()[name])
	}
	comp := &compiler{providers: c.providers, all: c.all}
	for _, name := range sortedKeys(p.GetRequirementMap()) {
		v, err := comp.compile(p.GetRequirementMap()[name])
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("requirement_map[%q].%w", name, err)
		}
		c.requirements[name] = v
	}
	for i, r := range p.GetRules() {
		cr, err := c.compileRule(r, comp)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("rules[%d].%w", i, err)
		}
		c.rules = append(c.rules, cr)
	}
	if err := c.compileStateRules(p.GetFilterStateRules(), comp); err != nil {
		c.Close()
		return nil, fmt.Errorf("filter_state_rules.%w", err)
	}
	return c, nil
}

// compileRule compiles a RequirementRule.
func (c *filterConfig) compileRule(r *jwtv3.RequirementRule, comp *compiler) (rule, error) {
	m, err := router.CompileMatch(r.GetMatch())
	if err != nil {
		return rule{}, fmt.Errorf("match.%w", err)
	}
	cr := rule{match: m}
	switch t := r.GetRequirementType().(type) {
	case *jwtv3.RequirementRule_Requires:
		if cr.v, err = comp.compile(t.Requires); err != nil {
			return rule{}, fmt.Errorf("requires.%w", err)
		}
	case *jwtv3.RequirementRule_RequirementName:
		v, ok := c.requirements[t.RequirementName]
		if !ok {
			return rule{}, fmt.Errorf("requirement_name: %q is not in requirement_map", t.RequirementName)
		}
		cr.v = v
	}
	return cr, nil
}

// routeConfig is a compiled PerRouteConfig.
type routeConfig struct {
	disabled bool
	name     string
}

// CompileRoute implements httpfilter.RouteFactory: a PerRouteConfig
// disables the filter on its route or names the requirement_map entry
// its requests must meet (checked per request, as Envoy does: a name the
// map lacks is answered 403).
func (Factory) CompileRoute(m proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := m.(*jwtv3.PerRouteConfig)
	if !ok {
		return nil, errors.New("not a PerRouteConfig configuration")
	}
	switch p.GetRequirementSpecifier().(type) {
	case *jwtv3.PerRouteConfig_Disabled:
		if !p.GetDisabled() {
			return nil, errors.New("disabled: must be true when set")
		}
		return &routeConfig{disabled: true}, nil
	case *jwtv3.PerRouteConfig_RequirementName:
		return &routeConfig{name: p.GetRequirementName()}, nil
	}
	return nil, errors.New("requirement_specifier: one of disabled or requirement_name is required")
}
