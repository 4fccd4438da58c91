// Package rbacengine is the role-based access control engine that the
// RBAC HTTP and network filters share (Envoy's filters/common/rbac): it
// compiles an envoy.config.rbac.v3.RBAC into policies of permissions and
// principals and decides, for one request or connection, whether a policy
// matches and what the action then says.
//
// Policies are evaluated in the order of their names (Envoy keeps them in
// an ordered map), and the first that matches is the effective policy: its
// name appears in the denial's response code details and in the shadow
// rules' dynamic metadata.
package rbacengine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// Action is what a matching policy means.
type Action uint8

// Envoy's RBAC actions.
const (
	// Allow lets a request through only when a policy matches.
	Allow Action = iota
	// Deny refuses a request when a policy matches.
	Deny
	// Log lets every request through; a match only marks the request for
	// logging.
	Log
)

// Engine is a compiled RBAC: its action and its policies, sorted by name,
// or the matcher form (CompileMatcher). It is immutable and safe for
// concurrent use.
type Engine struct {
	action   Action
	policies []policy
	// needs is what the policies read of the input, so that the filters
	// parse only that.
	needs Needs
	// tree is the matcher form (CompileMatcher), nil for policies;
	// hasLog reports that one of its actions is LOG.
	tree   *matchTree
	hasLog bool
}

// Needs says which inputs an engine reads.
type Needs uint8

// The inputs an engine may need beyond the request head.
const (
	NeedAddresses Needs = 1 << iota
	NeedTLS
	NeedRoute
	// NeedFilterState: a filter_state principal reads Input.FilterState.
	NeedFilterState
)

// policy is one named policy: it matches when one permission and one
// principal match.
type policy struct {
	name string
	// details are the response code details of a denial by this policy.
	details     string
	permissions node // an or of the permissions
	principals  node // an or of the principals
	// pathPrefix is what every path the permissions match starts with
	// ("" when they do not tell): a cheap test before the walk.
	pathPrefix string
	// condition is the policy's CEL condition (condition or
	// checked_condition), nil without one: the policy then also needs it
	// to be true.
	condition *cel.Program
}

// auditLoggingRefused says why audit_logging_options is refused.
const auditLoggingRefused = "audit_logging_options: not implemented by Envoy either ([#not-implemented-hide:] in its proto; " +
	"the RBAC audit loggers, envoy.rbac.audit_loggers.stream among them, are gRPC's: Envoy's RBAC filters never call one), so not supported by Outrigger"

// Compile compiles an RBAC message. Errors name the field path below it
// ("policies[\"admin\"].permissions[0].header.name: ...").
func Compile(r *rbacv3.RBAC) (*Engine, error) {
	e := &Engine{}
	var ok bool
	if e.action, ok = actionOf(r.GetAction()); !ok {
		return nil, fmt.Errorf("action: unknown action %d", r.GetAction())
	}
	if r.GetAuditLoggingOptions() != nil {
		return nil, errors.New(auditLoggingRefused)
	}
	names := make([]string, 0, len(r.GetPolicies()))
	for name := range r.GetPolicies() {
		names = append(names, name)
	}
	slices.Sort(names)
	var errs []error
	envs := map[cel.Options]*cel.Env{}
	for _, name := range names {
		p, err := compilePolicy(name, r.GetPolicies()[name], envs)
		if err != nil {
			errs = append(errs, fmt.Errorf("policies[%q].%w", name, err))
			continue
		}
		e.needs |= p.permissions.needs() | p.principals.needs()
		if p.condition != nil {
			// An expression may read any attribute.
			e.needs |= NeedAddresses | NeedTLS | NeedRoute
		}
		e.policies = append(e.policies, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e, nil
}

// actionOf is the Action of an RBAC action; false for an unknown one.
func actionOf(a rbacv3.RBAC_Action) (Action, bool) {
	switch a {
	case rbacv3.RBAC_ALLOW:
		return Allow, true
	case rbacv3.RBAC_DENY:
		return Deny, true
	case rbacv3.RBAC_LOG:
		return Log, true
	}
	return Allow, false
}

// compilePolicy compiles one policy; errors name the field below it.
// envs are the CEL environments of the policies' cel_config, each made by
// the first policy with a condition that needs it.
func compilePolicy(name string, p *rbacv3.Policy, envs map[cel.Options]*cel.Env) (policy, error) {
	out := policy{name: name, details: responseDetails(name)}
	if p.GetCondition() != nil || p.GetCheckedCondition() != nil {
		var err error
		if out.condition, err = compileCondition(p, envs); err != nil {
			return out, err
		}
	}
	if len(p.GetPermissions()) == 0 {
		return out, errors.New("permissions: at least one permission is required")
	}
	if len(p.GetPrincipals()) == 0 {
		return out, errors.New("principals: at least one principal is required")
	}
	var err error
	if out.permissions, err = compilePermissionList(p.GetPermissions(), "permissions"); err != nil {
		return out, err
	}
	if out.principals, err = compilePrincipalList(p.GetPrincipals(), "principals"); err != nil {
		return out, err
	}
	out.permissions, out.principals = out.permissions.simplify(), out.principals.simplify()
	out.pathPrefix = out.permissions.requiredPath()
	return out, nil
}

// Needs reports what the engine reads of its input.
func (e *Engine) Needs() Needs { return e.needs }

// Decision is the result of an evaluation.
type Decision struct {
	// Allowed is the action's verdict: ALLOW and a match, DENY and no
	// match, or LOG.
	Allowed bool
	// Matched reports that a policy matched; Policy is its name.
	Matched bool
	Policy  string
	// details is the policy's response code details.
	details string
	// hintSet reports that the decision marks the request for the
	// access logs (Envoy's envoy.common access_log_hint), with hint.
	hintSet, hint bool
}

// AccessLogHint is the decision's mark for the access logs: set when the
// engine has a LOG action (its action for policies, one of its actions
// for a matcher), and then whether the request should be logged.
func (d Decision) AccessLogHint() (hint, set bool) { return d.hint, d.hintSet }

// Evaluate runs the policies on in, in name order, until one matches. It
// allocates nothing unless a policy has a condition to evaluate. An
// engine of the matcher form evaluates its tree instead (evaluateTree).
func (e *Engine) Evaluate(in *Input) Decision {
	if e.tree != nil {
		return e.evaluateTree(in)
	}
	var d Decision
	in.prepare()
	for i := range e.policies {
		p := &e.policies[i]
		if p.pathPrefix != "" && (!in.hasPath || !strings.HasPrefix(in.urlPath, p.pathPrefix)) {
			continue
		}
		if p.permissions.match(in) && p.principals.match(in) && (p.condition == nil || p.condition.Matches(in.celActivation())) {
			d.Matched, d.Policy, d.details = true, p.name, p.details
			break
		}
	}
	switch e.action {
	case Allow:
		d.Allowed = d.Matched
	case Deny:
		d.Allowed = !d.Matched
	default:
		d.Allowed = true
		d.hintSet, d.hint = true, d.Matched
	}
	return d
}

// noPolicy is the details of a denial no policy matched.
const noPolicy = "rbac_access_denied_matched_policy[none]"

// Details is the response code details (or connection termination
// details) of a denial: Envoy's rbac_access_denied_matched_policy[<name>],
// with "none" when no policy matched. It allocates nothing.
func (d Decision) Details() string {
	if !d.Matched {
		return noPolicy
	}
	return d.details
}

// responseDetails is the details of a denial by the policy name, with
// white space in the name replaced by '_' so that the access log keeps
// its columns, as Envoy does.
func responseDetails(name string) string {
	name = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\f', '\v', '\n', '\r':
			return '_'
		}
		return r
	}, name)
	return "rbac_access_denied_matched_policy[" + name + "]"
}
