package router

import (
	"strings"
	"testing"
)

// hostsYAML has one virtual host per domain form; each answers its own
// name as a direct response body.
const hostsYAML = `
name: local
virtual_hosts:
- {name: exact, domains: [api.example.com], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: exact}}}]}
- {name: exact-port, domains: ["api.example.com:8080"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: exact-port}}}]}
- {name: short-suffix, domains: ["*.com"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: short-suffix}}}]}
- {name: long-suffix, domains: ["*.example.com"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: long-suffix}}}]}
- {name: dash-suffix, domains: ["*-bar.example.com"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: dash-suffix}}}]}
- {name: short-prefix, domains: ["foo.*"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: short-prefix}}}]}
- {name: long-prefix, domains: ["foo.bar.*"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: long-prefix}}}]}
- {name: ipv6, domains: ["[::1]:80"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: ipv6}}}]}
- {name: any, domains: ["*"], routes: [{match: {prefix: /app}, direct_response: {status: 200, body: {inline_string: any}}}]}
`

func TestVirtualHostSelection(t *testing.T) {
	table := mustCompile(t, hostsYAML)
	tests := map[string]struct {
		host string
		want string // virtual host name, "" for none
	}{
		"exact":                                    {host: "api.example.com", want: "exact"},
		"exact is case insensitive":                {host: "API.Example.COM", want: "exact"},
		"exact beats suffix":                       {host: "api.example.com", want: "exact"},
		"port is part of the host":                 {host: "api.example.com:8080", want: "exact-port"},
		"unknown port falls through to wildcards":  {host: "api.example.com:9090", want: "any"},
		"longest suffix wins":                      {host: "www.example.com", want: "long-suffix"},
		"longer dash suffix wins":                  {host: "baz-bar.example.com", want: "dash-suffix"},
		"suffix wildcard needs a non-empty head":   {host: "-bar.example.com", want: "long-suffix"},
		"shorter suffix":                           {host: "other.com", want: "short-suffix"},
		"suffix never matches the empty string":    {host: ".com", want: "any"},
		"suffix beats prefix":                      {host: "foo.example.com", want: "long-suffix"},
		"prefix wildcard":                          {host: "foo.net", want: "short-prefix"},
		"longest prefix wins":                      {host: "foo.bar.net", want: "long-prefix"},
		"prefix never matches the empty string":    {host: "foo.", want: "any"},
		"prefix wildcard matches a host with port": {host: "foo.net:80", want: "short-prefix"},
		"suffix wildcard does not skip the port":   {host: "www.example.com:80", want: "any"},
		"bracketed ipv6 with port":                 {host: "[::1]:80", want: "ipv6"},
		"catch-all":                                {host: "unknown", want: "any"},
		"empty host goes to the catch-all":         {host: "", want: "any"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			vh := table.virtualHost(&Request{Host: tc.host})
			got := ""
			if vh != nil {
				got = vh.Name
			}
			if got != tc.want {
				t.Errorf("virtual host for %q = %q, want %q", tc.host, got, tc.want)
			}
		})
	}
}

func TestVirtualHostWithoutCatchAll(t *testing.T) {
	table := mustCompile(t, `virtual_hosts: [{name: a, domains: [a.example], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}]`)
	if r := table.Match("b.example", "/"); r != nil {
		t.Errorf("Match(b.example) = route %q, want no route without a catch-all", r.Name)
	}
	if r := table.Match("a.example", "/x"); r == nil || r.VirtualHost.Name != "a" {
		t.Errorf("Match(a.example) = %v, want a route of virtual host a", r)
	}
}

func TestIgnorePortInHostMatching(t *testing.T) {
	table := mustCompile(t, `
ignore_port_in_host_matching: true
virtual_hosts:
- {name: plain, domains: [example.com, "[::1]"], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}
- {name: any, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}
`)
	tests := map[string]struct{ host, want string }{
		"port stripped":              {host: "example.com:8080", want: "plain"},
		"no port":                    {host: "example.com", want: "plain"},
		"ipv6 port stripped":         {host: "[::1]:443", want: "plain"},
		"non-numeric port kept":      {host: "example.com:http", want: "any"},
		"bare ipv6 has no port":      {host: "::1", want: "any"},
		"trailing colon is no port":  {host: "example.com:", want: "any"},
		"port-only host is not host": {host: ":80", want: "any"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := table.virtualHost(&Request{Host: tc.host}).Name; got != tc.want {
				t.Errorf("virtual host for %q = %q, want %q", tc.host, got, tc.want)
			}
		})
	}
}

// pathsYAML has one route per path matcher; each route is named for the
// test.
const pathsYAML = `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {name: exact, match: {path: /health}, direct_response: {status: 200}}
  - {name: exact-nocase, match: {path: /Status, case_sensitive: false}, direct_response: {status: 200}}
  - {name: separated, match: {path_separated_prefix: /api}, direct_response: {status: 200}}
  - {name: regex, match: {safe_regex: {regex: "/v[0-9]+/items"}}, direct_response: {status: 200}}
  - {name: prefix-nocase, match: {prefix: /Docs, case_sensitive: false}, direct_response: {status: 200}}
  - {name: prefix, match: {prefix: /static/}, direct_response: {status: 200}}
  - {name: fallback, match: {prefix: /}, direct_response: {status: 404}}
`

func TestPathMatch(t *testing.T) {
	table := mustCompile(t, pathsYAML)
	tests := map[string]struct{ path, want string }{
		"exact":                                 {path: "/health", want: "exact"},
		"exact ignores the query":               {path: "/health?verbose=1", want: "exact"},
		"exact ignores the fragment":            {path: "/health#top", want: "exact"},
		"exact is not a prefix":                 {path: "/healthz", want: "fallback"},
		"exact is case sensitive by default":    {path: "/HEALTH", want: "fallback"},
		"exact without case":                    {path: "/STATUS", want: "exact-nocase"},
		"separated prefix alone":                {path: "/api", want: "separated"},
		"separated prefix with a segment":       {path: "/api/v1", want: "separated"},
		"separated prefix with a query":         {path: "/api?x=1", want: "separated"},
		"separated prefix needs a separator":    {path: "/apiary", want: "fallback"},
		"regex is a full match":                 {path: "/v12/items", want: "regex"},
		"regex does not match a longer path":    {path: "/v12/items/3", want: "fallback"},
		"regex ignores the query":               {path: "/v1/items?page=2", want: "regex"},
		"prefix without case":                   {path: "/docs/intro", want: "prefix-nocase"},
		"prefix without case, upper":            {path: "/DOCS", want: "prefix-nocase"},
		"prefix":                                {path: "/static/app.js", want: "prefix"},
		"prefix is case sensitive":              {path: "/STATIC/app.js", want: "fallback"},
		"first matching route wins":             {path: "/", want: "fallback"},
		"empty path matches nothing but prefix": {path: "", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ""
			if r := table.Match("host", tc.path); r != nil {
				got = r.Name
			}
			if got != tc.want {
				t.Errorf("Match(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

// headersYAML has one route per header matcher rule, all on /h/<name>.
const headersYAML = `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {name: exact, match: {prefix: /exact, headers: [{name: X-Env, exact_match: prod}]}, direct_response: {status: 200}}
  - {name: prefix, match: {prefix: /prefix, headers: [{name: x-env, prefix_match: pr}]}, direct_response: {status: 200}}
  - {name: suffix, match: {prefix: /suffix, headers: [{name: x-env, suffix_match: od}]}, direct_response: {status: 200}}
  - {name: contains, match: {prefix: /contains, headers: [{name: x-env, contains_match: ro}]}, direct_response: {status: 200}}
  - {name: regex, match: {prefix: /regex, headers: [{name: x-env, safe_regex_match: {regex: "p.*d"}}]}, direct_response: {status: 200}}
  - {name: string, match: {prefix: /string, headers: [{name: x-env, string_match: {exact: PROD, ignore_case: true}}]}, direct_response: {status: 200}}
  - {name: range, match: {prefix: /range, headers: [{name: x-n, range_match: {start: -10, end: 10}}]}, direct_response: {status: 200}}
  - {name: present, match: {prefix: /present, headers: [{name: x-env, present_match: true}]}, direct_response: {status: 200}}
  - {name: absent, match: {prefix: /absent, headers: [{name: x-env, present_match: false}]}, direct_response: {status: 200}}
  - {name: bare, match: {prefix: /bare, headers: [{name: x-env}]}, direct_response: {status: 200}}
  - {name: invert, match: {prefix: /invert, headers: [{name: x-env, exact_match: prod, invert_match: true}]}, direct_response: {status: 200}}
  - {name: invert-present, match: {prefix: /invpresent, headers: [{name: x-env, present_match: true, invert_match: true}]}, direct_response: {status: 200}}
  - {name: missing-empty, match: {prefix: /missing, headers: [{name: x-env, range_match: {start: 0, end: 10}, invert_match: true, treat_missing_header_as_empty: true}]}, direct_response: {status: 200}}
  - {name: missing-strict, match: {prefix: /strict, headers: [{name: x-env, range_match: {start: 0, end: 10}, invert_match: true}]}, direct_response: {status: 200}}
  - {name: empty-regex, match: {prefix: /emptyre, headers: [{name: x-env, safe_regex_match: {regex: "^$"}, treat_missing_header_as_empty: true}]}, direct_response: {status: 200}}
  - {name: method, match: {prefix: /method, headers: [{name: ":method", exact_match: POST}]}, direct_response: {status: 200}}
  - {name: all, match: {prefix: /all, headers: [{name: a, exact_match: "1"}, {name: b, exact_match: "2"}]}, direct_response: {status: 200}}
  - {name: joined, match: {prefix: /joined, headers: [{name: x-multi, exact_match: "a,b"}]}, direct_response: {status: 200}}
  - {name: grpc, match: {prefix: /grpc, grpc: {}}, direct_response: {status: 200}}
`

func TestHeaderMatch(t *testing.T) {
	table := mustCompile(t, headersYAML)
	tests := map[string]struct {
		path    string
		method  string
		headers []string
		want    string // route name, "" for no match
	}{
		"exact":                                {path: "/exact", headers: []string{"x-env", "prod"}, want: "exact"},
		"exact, other value":                   {path: "/exact", headers: []string{"x-env", "dev"}},
		"exact, missing":                       {path: "/exact"},
		"prefix":                               {path: "/prefix", headers: []string{"x-env", "prod"}, want: "prefix"},
		"prefix, other":                        {path: "/prefix", headers: []string{"x-env", "dev"}},
		"suffix":                               {path: "/suffix", headers: []string{"x-env", "prod"}, want: "suffix"},
		"contains":                             {path: "/contains", headers: []string{"x-env", "prod"}, want: "contains"},
		"contains, other":                      {path: "/contains", headers: []string{"x-env", "dev"}},
		"regex is a full match":                {path: "/regex", headers: []string{"x-env", "prod"}, want: "regex"},
		"regex, partial value":                 {path: "/regex", headers: []string{"x-env", "prod1"}},
		"string match ignoring case":           {path: "/string", headers: []string{"x-env", "Prod"}, want: "string"},
		"range, low end included":              {path: "/range", headers: []string{"x-n", "-10"}, want: "range"},
		"range, high end excluded":             {path: "/range", headers: []string{"x-n", "10"}},
		"range, not a number":                  {path: "/range", headers: []string{"x-n", "ten"}},
		"present":                              {path: "/present", headers: []string{"x-env", ""}, want: "present"},
		"present, missing":                     {path: "/present"},
		"present false, missing":               {path: "/absent", want: "absent"},
		"present false, present":               {path: "/absent", headers: []string{"x-env", "x"}},
		"no specifier checks presence":         {path: "/bare", headers: []string{"x-env", "x"}, want: "bare"},
		"no specifier, missing":                {path: "/bare"},
		"inverted, other value":                {path: "/invert", headers: []string{"x-env", "dev"}, want: "invert"},
		"inverted, same value":                 {path: "/invert", headers: []string{"x-env", "prod"}},
		"inverted, missing never matches":      {path: "/invert"},
		"inverted presence, missing":           {path: "/invpresent", want: "invert-present"},
		"inverted presence, present":           {path: "/invpresent", headers: []string{"x-env", "1"}},
		"missing as empty, inverted range":     {path: "/missing", want: "missing-empty"},
		"missing not as empty, inverted range": {path: "/strict"},
		"missing as empty matches ^$":          {path: "/emptyre", want: "empty-regex"},
		"pseudo-header :method":                {path: "/method", method: "POST", want: "method"},
		"pseudo-header :method, other":         {path: "/method", method: "GET"},
		"every header must match":              {path: "/all", headers: []string{"a", "1", "b", "2"}, want: "all"},
		"every header must match, one missing": {path: "/all", headers: []string{"a", "1"}},
		"repeated header is matched joined":    {path: "/joined", headers: []string{"x-multi", "a", "x-multi", "b"}, want: "joined"},
		"grpc content type":                    {path: "/grpc", headers: []string{"content-type", "application/grpc+proto"}, want: "grpc"},
		"grpc needs its content type":          {path: "/grpc", headers: []string{"content-type", "application/json"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := &Request{Host: "h", Path: tc.path, Method: tc.method, Headers: newHeaders(tc.headers...)}
			got := ""
			if r := table.MatchRequest(req); r != nil {
				got = r.Name
			}
			if got != tc.want {
				t.Errorf("route = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestQueryParameterMatch(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {name: exact, match: {prefix: /exact, query_parameters: [{name: debug, string_match: {exact: "on"}}]}, direct_response: {status: 200}}
  - {name: present, match: {prefix: /present, query_parameters: [{name: debug, present_match: true}]}, direct_response: {status: 200}}
  - {name: regex, match: {prefix: /regex, query_parameters: [{name: id, string_match: {safe_regex: {regex: "[0-9]+"}}}]}, direct_response: {status: 200}}
  - {name: encoded, match: {prefix: /encoded, query_parameters: [{name: "a b", string_match: {exact: "x/y"}}]}, direct_response: {status: 200}}
`)
	tests := map[string]struct{ path, want string }{
		"exact":                          {path: "/exact?debug=on", want: "exact"},
		"exact among others":             {path: "/exact?a=1&debug=on&b", want: "exact"},
		"exact, other value":             {path: "/exact?debug=off"},
		"first occurrence counts":        {path: "/exact?debug=off&debug=on"},
		"no query":                       {path: "/exact"},
		"fragment is not the query":      {path: "/exact#debug=on"},
		"query before a fragment":        {path: "/exact?debug=on#frag", want: "exact"},
		"present without a value":        {path: "/present?debug", want: "present"},
		"present with an empty value":    {path: "/present?debug=", want: "present"},
		"present, other parameter":       {path: "/present?debugging=1"},
		"regex":                          {path: "/regex?id=42", want: "regex"},
		"regex is a full match":          {path: "/regex?id=42a"},
		"percent-decoded key and value":  {path: "/encoded?a%20b=x%2Fy", want: "encoded"},
		"plus is not a space":            {path: "/encoded?a+b=x%2Fy"},
		"malformed escape is kept as is": {path: "/encoded?a%2=x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ""
			if r := table.Match("h", tc.path); r != nil {
				got = r.Name
			}
			if got != tc.want {
				t.Errorf("Match(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

func TestMatchAllocatesNothing(t *testing.T) {
	table := mustCompile(t, benchYAML)
	reqs := benchRequests()
	allocs := testing.AllocsPerRun(100, func() {
		for i := range reqs {
			if table.MatchRequest(&reqs[i]) == nil {
				t.Fatalf("request %d matched no route", i)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("MatchRequest allocates %.1f times per round, want 0", allocs)
	}
}

// testTable is the table FuzzMatch explores.
func testTable(t testing.TB) *Table {
	t.Helper()
	return mustCompile(t, hostsYAML+`
- name: paths
  domains: [paths.example]
  routes:
  - {name: r1, match: {safe_regex: {regex: "/v[0-9]+/.*"}, query_parameters: [{name: q, string_match: {prefix: a}}]}, route: {cluster: c1, regex_rewrite: {pattern: {regex: "^/v([0-9]+)/"}, substitution: "/version/\\1/"}}}
  - {name: r2, match: {path_separated_prefix: /api, case_sensitive: false, headers: [{name: x, contains_match: "y", invert_match: true}]}, route: {cluster: c2, prefix_rewrite: /}}
  - {name: r3, match: {prefix: /}, redirect: {https_redirect: true, strip_query: true}}
`)
}

func FuzzMatch(f *testing.F) {
	for _, s := range []struct{ host, path string }{
		{"api.example.com", "/health"}, {"x:1", "/?"}, {"[::1]:80", "/app"}, {"", ""},
		{"paths.example", "/v1/x?q=abc"}, {"PATHS.example", "/API/x"}, {"paths.example:80", "/a?%zz"},
	} {
		f.Add(s.host, s.path)
	}
	table := testTable(f)
	f.Fuzz(func(t *testing.T, host, path string) {
		req := &Request{Host: host, Path: path, Scheme: "http"}
		r := table.MatchRequest(req)
		if r == nil {
			return
		}
		if r.Direct == nil && r.Redirect == nil && r.ClusterName(0) == "" {
			t.Fatalf("matched route %q without an action for %q %q", r.Name, host, path)
		}
		// The helpers must cope with whatever path matched.
		_ = r.RewritePath(path)
		if r.Redirect != nil && r.RedirectLocation(req, nil) == "" {
			t.Fatalf("empty redirect location for %q %q", host, path)
		}
	})
}

func TestRouteConfigurationFields(t *testing.T) {
	table := mustCompile(t, `
internal_only_headers: [X-Internal-Token, x-debug]
virtual_hosts:
- name: counted
  domains: [counted]
  include_request_attempt_count: true
  include_attempt_count_in_response: true
  routes:
  - match: {prefix: /}
    route: {cluster: c}
    metadata: {filter_metadata: {example.team: {owner: payments}}}
- name: plain
  domains: ["*"]
  routes:
  - {match: {prefix: /}, route: {cluster: c}}
`)
	if got, want := strings.Join(table.InternalOnlyHeaders, ","), "x-internal-token,x-debug"; got != want {
		t.Errorf("InternalOnlyHeaders = %q, want %q", got, want)
	}
	counted := table.Match("counted", "/")
	if vh := counted.VirtualHost; !vh.IncludeRequestAttemptCount || !vh.IncludeAttemptCountInResponse {
		t.Errorf("counted virtual host = %+v, want both attempt counts", vh)
	}
	owner := counted.Metadata.GetFilterMetadata()["example.team"].GetFields()["owner"].GetStringValue()
	if owner != "payments" {
		t.Errorf("Metadata owner = %q, want payments", owner)
	}
	plain := table.Match("other", "/")
	if vh := plain.VirtualHost; vh.IncludeRequestAttemptCount || vh.IncludeAttemptCountInResponse {
		t.Errorf("plain virtual host = %+v, want no attempt counts", vh)
	}
	if plain.Metadata != nil {
		t.Errorf("Metadata = %v, want nil", plain.Metadata)
	}
}
