package router

import (
	"strings"
	"testing"
)

// redirectRoute is a route named r with the given action fields.
func redirectRoute(action string) string {
	return vhost("{name: r, match: {prefix: /}, route: {cluster: c, " + action + "}}")
}

func TestInternalRedirectPolicyCompile(t *testing.T) {
	route := func(t *testing.T, action string) *Route {
		t.Helper()
		return mustCompile(t, redirectRoute(action)).Match("h", "/")
	}
	if r := route(t, "timeout: 1s"); r.InternalRedirect != nil {
		t.Error("a route without a policy follows redirects")
	}
	if r := route(t, "internal_redirect_action: PASS_THROUGH_INTERNAL_REDIRECT"); r.InternalRedirect != nil {
		t.Error("PASS_THROUGH_INTERNAL_REDIRECT follows redirects")
	}
	p := route(t, "internal_redirect_policy: {}").InternalRedirect
	if p == nil || p.MaxRedirects != 1 || !p.Follows(302) || p.Follows(301) || p.AllowCrossScheme {
		t.Errorf("defaults: %+v, want 1 redirect of 302s, same scheme", p)
	}
	// The deprecated pair, as Envoy reads it.
	p = route(t, "internal_redirect_action: HANDLE_INTERNAL_REDIRECT, max_internal_redirects: 3").InternalRedirect
	if p == nil || p.MaxRedirects != 3 || !p.Follows(302) || p.Follows(307) {
		t.Errorf("deprecated form: %+v, want 3 redirects of 302s", p)
	}
	// Codes Envoy cannot follow are skipped, as Envoy skips them.
	p = route(t, "internal_redirect_policy: {max_internal_redirects: 0, redirect_response_codes: [301, 303, 304, 308, 200], allow_cross_scheme_redirect: true, response_headers_to_copy: [X-A]}").InternalRedirect
	for code, want := range map[int]bool{301: true, 302: false, 303: true, 304: false, 307: false, 308: true, 200: false} {
		if p.Follows(code) != want {
			t.Errorf("Follows(%d) = %v", code, !want)
		}
	}
	if p.MaxRedirects != 0 || !p.AllowCrossScheme || len(p.HeadersToCopy) != 1 || p.HeadersToCopy[0] != "x-a" {
		t.Errorf("policy %+v", p)
	}
}

func TestInternalRedirectCompileErrors(t *testing.T) {
	for name, tc := range map[string]struct{ action, want string }{
		"pseudo header":    {"internal_redirect_policy: {response_headers_to_copy: [x-a, ':path']}", "route.internal_redirect_policy.response_headers_to_copy[1]"},
		"host":             {"internal_redirect_policy: {response_headers_to_copy: [Host]}", "response_headers_to_copy[0]"},
		"no typed_config":  {"internal_redirect_policy: {predicates: [{name: x}]}", "internal_redirect_policy.predicates[0].typed_config"},
		"empty route name": {"internal_redirect_policy: {predicates: [{name: a, typed_config: {'@type': type.googleapis.com/envoy.extensions.internal_redirect.allow_listed_routes.v3.AllowListedRoutesConfig, allowed_route_names: ['']}}]}", "predicates[0].typed_config"},
		"other type":       {"internal_redirect_policy: {predicates: [{name: a, typed_config: {'@type': type.googleapis.com/envoy.config.route.v3.Route}}]}", "not an internal redirect predicate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(parseRC(t, redirectRoute(tc.action)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestRedirectPredicates(t *testing.T) {
	p := mustCompile(t, redirectRoute(`internal_redirect_policy: {predicates: [
	  {name: p, typed_config: {'@type': type.googleapis.com/envoy.extensions.internal_redirect.previous_routes.v3.PreviousRoutesConfig}},
	  {name: a, typed_config: {'@type': type.googleapis.com/envoy.extensions.internal_redirect.allow_listed_routes.v3.AllowListedRoutesConfig, allowed_route_names: [b, c]}},
	  {name: s, typed_config: {'@type': type.googleapis.com/envoy.extensions.internal_redirect.safe_cross_scheme.v3.SafeCrossSchemeConfig}}]}`)).Match("h", "/").InternalRedirect
	prev, allow, safe := p.Predicates[0], p.Predicates[1], p.Predicates[2]
	var st RedirectState
	// previous_routes: each target once per owning route.
	if !prev.Accept(&st, "b", false, false) || prev.Accept(&st, "b", false, false) || !prev.Accept(&st, "c", false, false) {
		t.Error("previous_routes: want b, then not b again, then c")
	}
	other := previousRoutes{owner: "other"}
	if !other.Accept(&st, "b", false, false) {
		t.Error("previous_routes: another route's predicate shares the visited set")
	}
	if !allow.Accept(&st, "b", false, false) || allow.Accept(&st, "d", false, false) || allow.Accept(&st, "", false, false) {
		t.Error("allow_listed_routes: want b only")
	}
	for _, c := range []struct{ down, target, want bool }{{false, false, true}, {false, true, false}, {true, false, true}, {true, true, true}} {
		if got := safe.Accept(&st, "b", c.down, c.target); got != c.want {
			t.Errorf("safe_cross_scheme(https downstream %v, https target %v) = %v", c.down, c.target, got)
		}
	}
	names := []string{prev.Name(), allow.Name(), safe.Name()}
	if names[0] != PreviousRoutesName || names[1] != AllowListedRoutesName || names[2] != SafeCrossSchemeName {
		t.Errorf("names %v", names)
	}
}

func TestParseRedirectLocation(t *testing.T) {
	for loc, want := range map[string]string{
		"http://a.test/x?y=1#frag": "http a.test /x?y=1",
		"HTTPS://a.test:8443":      "https a.test:8443 /",
		"http://a.test/p%20q?":     "http a.test /p%20q?",
		"/relative":                "",
		"":                         "",
		"ftp://a.test/":            "",
		"http:///nohost":           "",
		"http://user@a.test/":      "",
		"http://a.test/%zz":        "",
		"mailto:x@y.test":          "",
	} {
		got, ok := ParseRedirectLocation(loc)
		s := ""
		if ok {
			s = got.Scheme + " " + got.Authority + " " + got.Path
		}
		if s != want {
			t.Errorf("%q: %q, want %q", loc, s, want)
		}
	}
}
