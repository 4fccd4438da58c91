package router

import (
	"strings"
	"testing"
)

// luaMatcher is a StringMatcher (YAML flow style) whose custom pattern is
// the Lua matcher with code.
func luaMatcher(code string) string {
	return `{custom: {name: envoy.string_matcher.lua, typed_config: {"@type": type.googleapis.com/envoy.extensions.string_matcher.lua.v3.Lua, ` +
		`source_code: {inline_string: '` + strings.ReplaceAll(code, "'", "''") + `'}}}}`
}

// TestCustomStringMatcher routes on header and path matchers whose
// pattern is a Lua script, as Envoy's envoy.string_matcher.lua does.
func TestCustomStringMatcher(t *testing.T) {
	table := mustCompile(t, vhost(
		"{match: {prefix: /, headers: [{name: ':path', string_match: "+luaMatcher(`function envoy_match(s) return string.find(s, "^/v%d+/") ~= nil end`)+"}]}, route: {cluster: versioned}}, "+
			"{match: {prefix: /, headers: [{name: x-user, string_match: "+luaMatcher(`function envoy_match(s) return #s > 3 and s:upper() == s end`)+"}]}, route: {cluster: loud}}, "+
			"{match: {prefix: /, headers: [{name: x-fail, string_match: "+luaMatcher(`function envoy_match(s) error("boom") end`)+"}]}, route: {cluster: failed}}, "+
			"{match: {prefix: /, headers: [{name: x-string, string_match: "+luaMatcher(`function envoy_match(s) return "true" end`)+"}]}, route: {cluster: string}}, "+
			"{match: {prefix: /}, route: {cluster: rest}}"))
	tests := map[string]struct {
		path    string
		headers []string
		want    string
	}{
		"path matches":                  {path: "/v12/items", want: "versioned"},
		"path does not":                 {path: "/vx/items", want: "rest"},
		"header matches":                {path: "/", headers: []string{"x-user", "ADMIN"}, want: "loud"},
		"header does not":               {path: "/", headers: []string{"x-user", "Admin"}, want: "rest"},
		"a script error is no match":    {path: "/", headers: []string{"x-fail", "x"}, want: "rest"},
		"a non-boolean result is false": {path: "/", headers: []string{"x-string", "x"}, want: "rest"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := table.MatchRequest(&Request{Host: "h", Path: tc.path, Method: "GET", Headers: newHeaders(tc.headers...)})
			if r == nil || r.Cluster != tc.want {
				t.Fatalf("route %+v, want cluster %s", r, tc.want)
			}
		})
	}
}

func TestCustomStringMatcherErrors(t *testing.T) {
	route := func(m string) string {
		return vhost("{match: {prefix: /, headers: [{name: x, string_match: " + m + "}]}, route: {cluster: c}}")
	}
	tests := map[string]struct{ matcher, want string }{
		"no envoy_match": {luaMatcher(`x = 1`),
			"virtual_hosts[0].routes[0].match.headers[0].string_match.custom.typed_config.source_code: Lua code did not contain a global function named 'envoy_match'"},
		"syntax error": {luaMatcher(`function envoy_match(`),
			"string_match.custom.typed_config.source_code: script does not compile"},
		"error at load": {luaMatcher(`error("no")`),
			"string_match.custom.typed_config.source_code: script load error"},
		"another extension": {`{custom: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}`,
			"string_match.custom.typed_config: string matcher google.protobuf.Empty is not supported by Outrigger"},
		"no source": {`{custom: {name: x, typed_config: {"@type": type.googleapis.com/envoy.extensions.string_matcher.lua.v3.Lua}}}`,
			"string_match.custom.typed_config.source_code: a script is required"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(parseRC(t, route(tc.matcher)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
