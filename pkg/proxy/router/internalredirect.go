package router

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	allowlistedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/allow_listed_routes/v3"
	previousv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/previous_routes/v3"
	safeschemev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/safe_cross_scheme/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// RedirectPredicateCategory is Envoy's category of internal redirect
// predicates, which package router implements itself (they are pure
// functions of the route names and schemes).
const RedirectPredicateCategory = "envoy.internal_redirect_predicates"

// The names of the predicates, in the proxy. spelling.
const (
	PreviousRoutesName    = "proxy.internal_redirect_predicates.previous_routes"
	AllowListedRoutesName = "proxy.internal_redirect_predicates.allow_listed_routes"
	SafeCrossSchemeName   = "proxy.internal_redirect_predicates.safe_cross_scheme"
)

// InternalRedirectPolicy is a route's internal_redirect_policy (or the
// deprecated internal_redirect_action: HANDLE_INTERNAL_REDIRECT): which
// upstream redirects the proxy follows itself instead of passing them to
// the client, as Envoy's InternalRedirectPolicyImpl.
type InternalRedirectPolicy struct {
	// MaxRedirects is how many redirects one downstream request may
	// follow in all (max_internal_redirects, default 1).
	MaxRedirects uint32
	// codes marks the response codes followed, by code-300 (301, 302,
	// 303, 307, 308; 302 alone by default).
	codes [9]bool
	// AllowCrossScheme: the redirect may change http to https or back.
	AllowCrossScheme bool
	// Predicates run in order on the target route; one that refuses
	// passes the redirect through.
	Predicates []RedirectPredicate
	// HeadersToCopy are response_headers_to_copy, lower case: the
	// redirect response's values replace the request's.
	HeadersToCopy []string
}

// Follows reports whether a response with status is one the policy
// follows.
func (p *InternalRedirectPolicy) Follows(status int) bool {
	return status >= 300 && status <= 308 && p.codes[status-300]
}

// RedirectState is what the predicates keep for one downstream request
// across its redirects (Envoy keeps it in the request's filter state).
type RedirectState struct {
	// Count is how many redirects the request followed.
	Count uint32
	// visited holds, by the name of the route whose policy has a
	// previous_routes predicate, the target routes it accepted.
	visited map[string][]string
}

// Empty reports whether st holds nothing: no redirect followed, no route
// visited (a previous_routes predicate may record one for a redirect a
// later predicate refused).
func (st *RedirectState) Empty() bool { return st.Count == 0 && st.visited == nil }

// RedirectPredicate decides whether a redirect may go to a route.
type RedirectPredicate interface {
	// Name is the predicate's extension name.
	Name() string
	// Accept is called with the target route's name, whether the
	// downstream request was https and whether the target is.
	Accept(st *RedirectState, target string, downstreamHTTPS, targetHTTPS bool) bool
}

// previousRoutes refuses a target route the redirects of a request from
// the route that owns the predicate already went to.
type previousRoutes struct{ owner string }

func (previousRoutes) Name() string { return PreviousRoutesName }

func (p previousRoutes) Accept(st *RedirectState, target string, _, _ bool) bool {
	seen := st.visited[p.owner]
	if slices.Contains(seen, target) {
		return false
	}
	if st.visited == nil {
		st.visited = map[string][]string{}
	}
	st.visited[p.owner] = append(seen, target)
	return true
}

// allowListedRoutes accepts only the routes it names.
type allowListedRoutes struct{ names []string }

func (allowListedRoutes) Name() string { return AllowListedRoutesName }

func (p allowListedRoutes) Accept(_ *RedirectState, target string, _, _ bool) bool {
	return slices.Contains(p.names, target)
}

// safeCrossScheme lets an https request go to http or https targets, an
// http one to http targets only.
type safeCrossScheme struct{}

func (safeCrossScheme) Name() string { return SafeCrossSchemeName }

func (safeCrossScheme) Accept(_ *RedirectState, _ string, downstreamHTTPS, targetHTTPS bool) bool {
	return downstreamHTTPS || !targetHTTPS
}

// compileInternalRedirect compiles a route action's internal redirect
// policy into r; errors name the field below the RouteAction.
func compileInternalRedirect(r *Route, a *routev3.RouteAction) error {
	pc := a.GetInternalRedirectPolicy()
	if pc == nil {
		//lint:ignore SA1019 Envoy still honours the deprecated internal_redirect_action
		if a.GetInternalRedirectAction() != routev3.RouteAction_HANDLE_INTERNAL_REDIRECT {
			return nil
		}
		// The deprecated form: 302 only, max_internal_redirects beside
		// it, as Envoy builds it.
		//lint:ignore SA1019 Envoy still honours the deprecated max_internal_redirects
		pc = &routev3.InternalRedirectPolicy{MaxInternalRedirects: a.GetMaxInternalRedirects()}
	}
	p, err := compileRedirectPolicy(pc, r.Name)
	if err != nil {
		return fmt.Errorf("internal_redirect_policy.%w", err)
	}
	r.InternalRedirect = p
	return nil
}

func compileRedirectPolicy(pc *routev3.InternalRedirectPolicy, routeName string) (*InternalRedirectPolicy, error) {
	p := &InternalRedirectPolicy{MaxRedirects: 1, AllowCrossScheme: pc.GetAllowCrossSchemeRedirect()}
	if m := pc.GetMaxInternalRedirects(); m != nil {
		p.MaxRedirects = m.GetValue()
	}
	codes := pc.GetRedirectResponseCodes()
	if len(codes) == 0 {
		codes = []uint32{302}
	}
	for _, c := range codes {
		// Envoy keeps the codes it can follow and skips the others,
		// which never match a response then; so does Outrigger.
		switch c {
		case 301, 302, 303, 307, 308:
			p.codes[c-300] = true
		}
	}
	for i, h := range pc.GetResponseHeadersToCopy() {
		name := strings.ToLower(h)
		if strings.HasPrefix(name, ":") || name == "host" {
			return nil, fmt.Errorf("response_headers_to_copy[%d]: %q: :-prefixed headers or Host may not be specified here", i, h)
		}
		p.HeadersToCopy = append(p.HeadersToCopy, name)
	}
	for i, tc := range pc.GetPredicates() {
		pr, err := compileRedirectPredicate(tc, routeName)
		if err != nil {
			return nil, fmt.Errorf("predicates[%d].%w", i, err)
		}
		p.Predicates = append(p.Predicates, pr)
	}
	return p, nil
}

// compileRedirectPredicate builds a predicate from its typed_config.
func compileRedirectPredicate(tc *corev3.TypedExtensionConfig, routeName string) (RedirectPredicate, error) {
	if tc.GetTypedConfig() == nil {
		return nil, errors.New("typed_config: a predicate's typed_config is required")
	}
	m, err := anypb.UnmarshalNew(tc.GetTypedConfig(), proto.UnmarshalOptions{})
	if err != nil {
		return nil, fmt.Errorf("typed_config: %w", err)
	}
	switch c := m.(type) {
	case *previousv3.PreviousRoutesConfig:
		return previousRoutes{owner: routeName}, nil
	case *allowlistedv3.AllowListedRoutesConfig:
		if err := c.ValidateAll(); err != nil {
			return nil, fmt.Errorf("typed_config: %w", err)
		}
		return allowListedRoutes{names: c.GetAllowedRouteNames()}, nil
	case *safeschemev3.SafeCrossSchemeConfig:
		return safeCrossScheme{}, nil
	default:
		return nil, fmt.Errorf("typed_config: %s is not an internal redirect predicate Outrigger implements", tc.GetTypedConfig().GetTypeUrl())
	}
}

// RedirectTarget is a Location header parsed for an internal redirect.
type RedirectTarget struct {
	// Scheme, Authority (host and port) and Path (with the query, the
	// fragment dropped) of the absolute URL.
	Scheme, Authority, Path string
}

// ParseRedirectLocation parses a Location value as Envoy's
// Http::Utility::Url does for internal redirects: an absolute http or
// https URL with a host; false when it is not one.
func ParseRedirectLocation(loc string) (RedirectTarget, bool) {
	if loc == "" {
		return RedirectTarget{}, false
	}
	u, err := url.Parse(loc)
	if err != nil || u.Host == "" || u.Opaque != "" || u.User != nil {
		return RedirectTarget{}, false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return RedirectTarget{}, false
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		path += "?" + u.RawQuery
	}
	return RedirectTarget{Scheme: scheme, Authority: u.Host, Path: path}, true
}
