// Package rbac is the role-based access control HTTP filter
// (envoy.filters.http.rbac): its rules decide, from the request head and
// the downstream connection, whether a request goes on or is answered 403
// "RBAC: access denied" with the response code details
// rbac_access_denied_matched_policy[<policy>]; its shadow rules are
// evaluated and counted without effect, their result recorded in the
// request's dynamic metadata (envoy.filters.http.rbac). Both may take the
// matcher form (matcher, shadow_matcher: an xDS matcher whose actions are
// envoy.config.rbac.v3.Action, see rbacengine.CompileMatcher). Routes
// may replace or disable the rules (RBACPerRoute). Stats are Envoy's,
// under http.<stat_prefix>.rbac.
package rbac

import (
	"errors"
	"fmt"

	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/rbacengine"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.rbac"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// rules are the engines of one level: the filter's or a route's. A nil
// engine is absent rules; both nil let every request through.
type rules struct {
	enforced, shadow *rbacengine.Engine
	// shadowPolicyKey and shadowResultKey are the dynamic metadata
	// fields of the shadow rules' result: Envoy's names after the
	// shadow_rules_stat_prefix. A route's rules have their own when the
	// route sets a prefix (ownKeys), else they use the filter's.
	shadowPolicyKey, shadowResultKey string
	ownKeys                          bool
	// needs is what the engines read beyond the request head.
	needs rbacengine.Needs
	// perRule is track_per_rule_stats: the level's decisions are also
	// counted per policy (under the filter's prefixes, as in Envoy, whose
	// per-route setting decides for its route).
	perRule bool
}

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(m proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := m.(*httprbacv3.RBAC)
	if !ok {
		return nil, errors.New("not an RBAC configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	r, err := compileRules(p)
	if err != nil {
		return nil, err
	}
	r.setShadowKeys(p.GetShadowRulesStatPrefix())
	c := &filterConfig{
		name:  ctx.Name,
		rules: r,
		stats: rbacengine.NewStats(ctx.Stats, ctx.StatPrefix, p.GetRulesStatPrefix(), p.GetShadowRulesStatPrefix()),
		// A route's rules may track per-rule stats when the filter's do
		// not: the counters are ready either way, made on first use.
		policies: newPolicyStats(ctx.Stats, ctx.StatPrefix, p.GetRulesStatPrefix(), p.GetShadowRulesStatPrefix()),
	}
	c.filter.c = c
	return c, nil
}

// CompileRoute implements httpfilter.RouteFactory: an RBACPerRoute
// replaces the filter's rules on its route, and one without rbac
// disables the filter there. The filter's stats count either way.
func (Factory) CompileRoute(m proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := m.(*httprbacv3.RBACPerRoute)
	if !ok {
		return nil, errors.New("not an RBACPerRoute configuration")
	}
	rb := p.GetRbac()
	if rb == nil {
		return &rules{}, nil
	}
	// Per route, Envoy's prefixes only name the dynamic metadata
	// fields (the filter's stats count): rules_stat_prefix those of the
	// enforced result, which Outrigger does not record.
	switch {
	case rb.GetRulesStatPrefix() != "":
		return nil, errors.New("rbac.rules_stat_prefix: not supported per route (it names the enforced_* dynamic metadata, which Outrigger does not record)")
	}
	r, err := compileRules(rb)
	if err != nil {
		return nil, fmt.Errorf("rbac.%w", err)
	}
	if prefix := rb.GetShadowRulesStatPrefix(); prefix != "" {
		r.setShadowKeys(prefix)
		r.ownKeys = true
	}
	return r, nil
}

// compileRules compiles the rules and shadow rules of an RBAC, or their
// matcher forms.
func compileRules(p *httprbacv3.RBAC) (*rules, error) {
	r := &rules{perRule: p.GetTrackPerRuleStats()}
	var err error
	if r.enforced, err = rbacengine.CompileForm(p.GetRules(), p.GetMatcher(), rbacengine.HTTPFilter, "rules", "matcher"); err != nil {
		return nil, err
	}
	if r.shadow, err = rbacengine.CompileForm(p.GetShadowRules(), p.GetShadowMatcher(), rbacengine.HTTPFilter, "shadow_rules", "shadow_matcher"); err != nil {
		return nil, err
	}
	if r.enforced != nil {
		r.needs |= r.enforced.Needs()
	}
	if r.shadow != nil {
		r.needs |= r.shadow.Needs()
	}
	return r, nil
}

// setShadowKeys names the shadow result's metadata fields.
func (r *rules) setShadowKeys(prefix string) {
	r.shadowPolicyKey = prefix + "shadow_effective_policy_id"
	r.shadowResultKey = prefix + "shadow_engine_result"
}
