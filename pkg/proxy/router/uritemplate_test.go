package router

import (
	"strings"
	"testing"
)

// uriTemplateYAML is a path_match_policy (or RBAC uri_template) naming the
// uri_template matcher with tmpl.
func uriTemplateYAML(tmpl string) string {
	return "{name: envoy.path.match.uri_template.uri_template_matcher, typed_config: {'@type': type.googleapis.com/envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig, path_template: '" + tmpl + "'}}"
}

// uriRewriteYAML is a path_rewrite_policy naming the uri_template
// rewriter with tmpl.
func uriRewriteYAML(tmpl string) string {
	return "{name: envoy.path.rewrite.uri_template.uri_template_rewriter, typed_config: {'@type': type.googleapis.com/envoy.extensions.path.rewrite.uri_template.v3.UriTemplateRewriteConfig, path_template_rewrite: '" + tmpl + "'}}"
}

// TestURITemplateMatch checks the grammar of Envoy's uri_template library
// (its tests' templates and paths among them).
func TestURITemplateMatch(t *testing.T) {
	tests := []struct {
		tmpl     string
		match    []string
		noMatch  []string
		firstSeg string
	}{
		{tmpl: "/", match: []string{"/", "/?q=1"}, noMatch: []string{"/a"}},
		{tmpl: "/abc", match: []string{"/abc", "/abc?x=/y", "/abc#frag"}, noMatch: []string{"/ABC", "/abc/", "/abcd"}, firstSeg: "/abc"},
		{tmpl: "/abc/", match: []string{"/abc/"}, noMatch: []string{"/abc"}, firstSeg: "/abc"},
		{tmpl: "/**.mpd", match: []string{"/a.mpd", "/a/b/c.mpd", "/.mpd"}, noMatch: []string{"/a.mpdx", "/a.m3u8"}},
		{tmpl: "/api/*/{resource=*}/{method=**}", match: []string{"/api/v1/users/", "/api/v1/users/get/all"}, noMatch: []string{"/api/v1/users", "/api//users/get"}, firstSeg: "/api"},
		{tmpl: "/foo/{bar}/**", match: []string{"/foo/x/", "/foo/x/y/z"}, noMatch: []string{"/foo/x", "/foo/x.y", "/bar/x/y"}, firstSeg: "/foo"},
		{tmpl: "/{var}.jpg", match: []string{"/cat.jpg", "/a;b.jpg"}, noMatch: []string{"/a/b.jpg", "/.jpg"}},
		{tmpl: "/media/{file=**}/x", match: []string{"/media/a/b/x", "/media//x"}, firstSeg: "/media"},
		{tmpl: "/a+b/(c)", match: []string{"/a+b/(c)"}, noMatch: []string{"/aab/c"}, firstSeg: "/a+b"},
		{tmpl: "/x/{v=a/*/b}", match: []string{"/x/a/q/b"}, noMatch: []string{"/x/a/q/c", "/x/a//b"}, firstSeg: "/x"},
		{tmpl: "/s/{a}/{b}/{c}/{d}/{e}", match: []string{"/s/1/2/3/4/5"}, firstSeg: "/s"},
		// '*' never matches a character outside a literal's set.
		{tmpl: "/q/*", match: []string{"/q/a%20b", "/q/~@:!$&'()+,;"}, noMatch: []string{"/q/a b", "/q/a*b", "/q/a=b"}, firstSeg: "/q"},
	}
	for _, tc := range tests {
		tm, err := CompileURITemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tc.tmpl, err)
		}
		for _, p := range tc.match {
			if !tm.Match(p) {
				t.Errorf("%s does not match %s", tc.tmpl, p)
			}
		}
		for _, p := range tc.noMatch {
			if tm.Match(p) {
				t.Errorf("%s matches %s", tc.tmpl, p)
			}
		}
		if tm.literal != tc.firstSeg {
			t.Errorf("%s: first segment %q, want %q", tc.tmpl, tm.literal, tc.firstSeg)
		}
	}
}

// TestURITemplateInvalid checks the templates Envoy's library refuses.
func TestURITemplateInvalid(t *testing.T) {
	for tmpl, want := range map[string]string{
		"":                         "printable",
		"foo":                      "printable",
		"/a b":                     "printable",
		"/\x01":                    "printable",
		"/api/v*/1234":             "invalid literal",
		"/media/**/*/**":           "glob after text glob",
		"/**/{id}":                 "implicit variable path glob after text glob",
		"/{x=**}/{y=*}":            "glob after text glob",
		"/{var12345678901234=*}":   "longer than 16",
		"/{var12345678901234=*":    "unmatched variable bracket",
		"/{a}/{b}/{c}/{d}/{e}/{f}": "more than 5 variables",
		"/{a}/{a}":                 "repeated variable name",
		"/{1a}":                    "invalid variable name",
		"/{a=}":                    "empty variable match",
		"/{a=b/}":                  "invalid variable match",
		"/{a=b*}":                  "invalid literal",
		"/foo//bar/{goo}":          "invalid literal",
		"//bar/{goo}":              "invalid literal",
		"/foo/bar/{goo}}":          "invalid literal",
		"/*.a/b":                   "a suffix must end the template",
		"/a=b":                     "invalid literal",
	} {
		_, err := CompileURITemplate(tmpl)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", tmpl, err, want)
		}
	}
}

// TestTemplateRewrite checks rewrites with the matcher's captures, from
// Envoy's URLPatternMatchAndRewrite cases plus queries.
func TestTemplateRewrite(t *testing.T) {
	tests := []struct{ match, rewrite, path, want string }{
		{"/api/users/{id}/{path=**}", "/users/{id}/{path}", "/api/users/21334/profile.json", "/users/21334/profile.json"},
		{"/videos/*/{id}/{format}/{rendition}/{segment=**}.ts", "/{id}/{format}/{rendition}/{segment}.ts", "/videos/lib/132939/hls/13/segment_00001.ts", "/132939/hls/13/segment_00001.ts"},
		{"/region/{region}/bucket/{name}/{method=**}", "/{region}/bucket-{name}/{method}", "/region/eu/bucket/prod-storage/object.pdf", "/eu/bucket-prod-storage/object.pdf"},
		{"/region/{region}/bucket/{name}/{method=**}", "/{region}{name}/{method}", "/region/eu/bucket/prod-storage/object.pdf", "/euprod-storage/object.pdf"},
		{"/foo/{bar}/**", "/{bar}/{bar}", "/foo/x/y?q=1&r=/2", "/x/x?q=1&r=/2"},
		{"/foo/{bar}", "/static", "/foo/x", "/static"},
	}
	for _, tc := range tests {
		m, err := CompileURITemplate(tc.match)
		if err != nil {
			t.Fatal(err)
		}
		rw, err := CompileTemplateRewrite(tc.rewrite, m)
		if err != nil {
			t.Fatalf("%s: %v", tc.rewrite, err)
		}
		got, ok := rw.Rewrite(tc.path)
		if !ok || got != tc.want {
			t.Errorf("%s -> %s on %s: %q %v, want %q", tc.match, tc.rewrite, tc.path, got, ok, tc.want)
		}
	}
	m, _ := CompileURITemplate("/foo/{bar}")
	rw, _ := CompileTemplateRewrite("/{bar}", m)
	if got, ok := rw.Rewrite("/other/x?q"); ok || got != "/other/x?q" {
		t.Errorf("a path the matcher refuses: %q %v, want it unchanged", got, ok)
	}
}

// TestTemplateRewriteInvalid checks the rewrites Envoy refuses, among them
// a variable the matcher does not capture.
func TestTemplateRewriteInvalid(t *testing.T) {
	m, err := CompileURITemplate("/{var1}/{var2}/{var3}/{var4}/{var5}")
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range []string{"{var1}", "/{var6}", "/{{var1}}", "/}va1{", "var1}", "/{var1}?abc=123", "", "/{var1/var2}", "/{}", "/a//b"} {
		if _, err := CompileTemplateRewrite(tmpl, m); err == nil {
			t.Errorf("%q was accepted", tmpl)
		}
	}
	for _, tmpl := range []string{"/{var1}", "/{var1}{var2}", "/{var1}-{var2}", "/abc/{var1}/def", "/abc-def-{var1}/a/{var1}", "/{var3}/abc/def/{var2}.suffix"} {
		if _, err := CompileTemplateRewrite(tmpl, m); err != nil {
			t.Errorf("%q: %v", tmpl, err)
		}
	}
}

// TestRouteURITemplate checks path_match_policy and path_rewrite_policy in
// a route table: first match order with the route index, the rewrite
// keeping the query string.
func TestRouteURITemplate(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ['*']
  routes:
  - {name: exact, match: {path: /foo/a/b}, direct_response: {status: 200}}
  - name: tmpl
    match: {path_match_policy: `+uriTemplateYAML("/foo/{bar}/{rest=**}")+`}
    route: {cluster: c, path_rewrite_policy: `+uriRewriteYAML("/new/{rest}/{bar}")+`}
  - {name: any, match: {prefix: /}, route: {cluster: d}}
`)
	for path, want := range map[string]string{
		"/foo/a/b":    "exact",
		"/foo/x/y/z":  "tmpl",
		"/FOO/x/y":    "any",
		"/foo/x":      "any",
		"/foo/x/?q=1": "tmpl",
		"/bar/x/y":    "any",
	} {
		r := table.Match("h", path)
		if r == nil || r.Name != want {
			t.Errorf("%s: got %v, want route %s", path, r, want)
		}
	}
	r := table.Match("h", "/foo/x/y/z?q=1")
	if !r.RewritesPath() {
		t.Fatal("RewritesPath is false")
	}
	if got := r.RewritePath("/foo/x/y/z?q=1"); got != "/new/y/z/x?q=1" {
		t.Errorf("rewrite: %q", got)
	}
}
