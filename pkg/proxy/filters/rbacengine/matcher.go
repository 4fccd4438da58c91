package rbacengine

import (
	"fmt"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// matchTree is the matcher form of an engine: the xDS match tree whose
// actions are RBAC actions (envoy.config.rbac.v3.Action).
type matchTree = httpmatch.Tree[*Input, *matchAction]

// matchAction is a compiled envoy.config.rbac.v3.Action: its name is the
// effective policy's.
type matchAction struct {
	name string
	// details are the response code details of a denial by this action.
	details string
	action  Action
}

// Filter says whose inputs a matcher may read: Envoy allows each RBAC
// filter its own list.
type Filter uint8

// The RBAC filters.
const (
	// HTTPFilter is envoy.filters.http.rbac: the request headers and the
	// connection's inputs.
	HTTPFilter Filter = iota
	// NetworkFilter is envoy.filters.network.rbac: the connection's
	// inputs.
	NetworkFilter
)

// CompileMatcher compiles the matcher form of RBAC (the filters' matcher
// and shadow_matcher) as Envoy's RoleBasedAccessControlMatcherEngineImpl
// builds it: the tree's actions are envoy.config.rbac.v3.Action, and its
// inputs those Envoy allows the filter. Errors name the field path below
// the matcher.
func CompileMatcher(m *xdsmatcherv3.Matcher, f Filter) (*Engine, error) {
	e := &Engine{}
	tree, err := httpmatch.CompileProbed(m, func(tc *xdscorev3.TypedExtensionConfig, path string) (*matchAction, error) {
		a, err := compileAction(tc, path)
		if err == nil && a.action == Log {
			e.hasLog = true
		}
		return a, err
	}, func(tc *xdscorev3.TypedExtensionConfig, path string) (httpmatch.Probe[*Input], error) {
		p, needs, err := compileMatchInput(tc, path, f)
		e.needs |= needs
		return p, err
	})
	if err != nil {
		return nil, err
	}
	e.tree = tree
	return e, nil
}

// CompileForm compiles a filter's rules (field) or their matcher form
// (matcherField), nil when there is neither. Errors name the field path
// from the field.
func CompileForm(r *rbacv3.RBAC, m *xdsmatcherv3.Matcher, f Filter, field, matcherField string) (*Engine, error) {
	switch {
	case m != nil && r != nil:
		// Envoy uses the matcher and ignores the rules, with a warning.
		return nil, fmt.Errorf("%s: set with %s, which would be ignored (as Envoy ignores it): set one of them", field, matcherField)
	case m != nil:
		e, err := CompileMatcher(m, f)
		if err != nil {
			return nil, fieldpath.Prefix(matcherField+".", err)
		}
		return e, nil
	case r == nil:
		return nil, nil
	}
	e, err := Compile(r)
	if err != nil {
		return nil, fieldpath.Prefix(field+".", err)
	}
	return e, nil
}

// compileAction reads an on_match action: an envoy.config.rbac.v3.Action.
func compileAction(tc *xdscorev3.TypedExtensionConfig, path string) (*matchAction, error) {
	want := proto.MessageName(&rbacv3.Action{})
	msg, err := httpmatch.TypedConfig(tc, path, "an action")
	if err != nil {
		return nil, err
	}
	ra, ok := msg.(*rbacv3.Action)
	if !ok {
		return nil, fmt.Errorf("%s.typed_config: action %s is not an RBAC action (only %s)", path, proto.MessageName(msg), want)
	}
	if err := ra.ValidateAll(); err != nil {
		// Envoy's validation: a name is required.
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	out := &matchAction{name: ra.GetName(), details: responseDetails(ra.GetName())}
	if out.action, ok = actionOf(ra.GetAction()); !ok {
		return nil, fmt.Errorf("%s.typed_config.action: unknown action %d", path, ra.GetAction())
	}
	return out, nil
}

// evaluateTree is Evaluate for the matcher form, as Envoy's matcher
// engine decides: the action of the tree's result, ALLOW and LOG letting
// the request through; no result (nothing matched and no on_no_match, or
// an input that could not read the request) denies it. The effective
// policy is the action's name.
func (e *Engine) evaluateTree(in *Input) Decision {
	var d Decision
	a, found, _ := e.tree.Evaluate(in)
	if !found {
		return d
	}
	d.Policy, d.Matched, d.details = a.name, true, a.details
	d.Allowed = a.action != Deny
	if e.hasLog {
		// Envoy marks every decision for the access logs once a tree
		// holds a LOG action: true for a LOG action, false otherwise.
		d.hintSet, d.hint = true, a.action == Log
	}
	return d
}
