package router

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// TestVhostHeader checks vhost_header: the first value of another header
// picks the virtual host; without it there is none, unless "*" is the only
// domain, as in Envoy's findVirtualHost.
func TestVhostHeader(t *testing.T) {
	table := mustCompile(t, `
vhost_header: X-Tenant
virtual_hosts:
- {name: a, domains: [a.example], routes: [{name: a, match: {prefix: /}, direct_response: {status: 200}}]}
- {name: any, domains: ['*'], routes: [{name: any, match: {prefix: /}, direct_response: {status: 200}}]}
`)
	for name, tc := range map[string]struct {
		host, tenant string
		want         string
	}{
		"by the header":           {host: "other", tenant: "A.example", want: "a"},
		"first of several values": {host: "a.example", tenant: "b.example,a.example", want: "any"},
		"the host is not read":    {host: "a.example", tenant: "zzz", want: "any"},
		"no header, no host":      {host: "a.example", want: ""},
	} {
		req := Request{Host: tc.host, Path: "/"}
		if tc.tenant != "" {
			req.Headers = newHeaders("x-tenant", tc.tenant)
		}
		got := ""
		if r := table.MatchRequest(&req); r != nil {
			got = r.Name
		}
		if got != tc.want {
			t.Errorf("%s: route %q, want %q", name, got, tc.want)
		}
	}
	only := mustCompile(t, "vhost_header: x-tenant\nvirtual_hosts: [{name: v, domains: ['*'], routes: [{name: r, match: {prefix: /}, direct_response: {status: 200}}]}]")
	if r := only.Match("h", "/"); r == nil {
		t.Error("a table with only a catch-all needs no header")
	}
}

// TestIgnorePathParameters checks ignore_path_parameters_in_path_matching:
// path matchers see the path up to its first ';', uri templates the whole
// path, whatever the route index keys.
func TestIgnorePathParameters(t *testing.T) {
	cfg := `
virtual_hosts:
- name: v
  domains: ['*']
  routes:
  - {name: exact, match: {path: /api/v1}, direct_response: {status: 200}}
  - {name: tmpl, match: {path_match_policy: ` + uriTemplateYAML("/t;x/**") + `}, direct_response: {status: 200}}
  - {name: regex, match: {safe_regex: {regex: '/r/[a-z]+'}}, direct_response: {status: 200}}
  - {name: any, match: {prefix: /}, direct_response: {status: 200}}
`
	off := mustCompile(t, cfg)
	on := mustCompile(t, "ignore_path_parameters_in_path_matching: true\n"+cfg)
	for path, want := range map[string][2]string{
		"/api/v1;jsessionid=1": {"any", "exact"},
		"/api/v1;a?q=1":        {"any", "exact"},
		"/api/v1?q=a;b":        {"exact", "exact"},
		"/r/abc;v=2":           {"any", "regex"},
		"/t;x/a":               {"tmpl", "tmpl"},
		"/api/v1":              {"exact", "exact"},
	} {
		for i, table := range []*Table{off, on} {
			r := table.Match("h", path)
			if r == nil || r.Name != want[i] {
				t.Errorf("%s (ignore %v): %v, want route %s", path, i == 1, r, want[i])
			}
		}
	}
	// The rewrite still sees the whole path.
	rw := mustCompile(t, "ignore_path_parameters_in_path_matching: true\nvirtual_hosts: [{name: v, domains: ['*'], routes: [{match: {prefix: /old}, route: {cluster: c, prefix_rewrite: /new}}]}]")
	if got := rw.Match("h", "/old;p/x").RewritePath("/old;p/x"); got != "/new;p/x" {
		t.Errorf("rewrite: %q", got)
	}
}

// TestDirectResponseBodyFormat checks body_format: the body is the format
// with %LOCAL_REPLY_BODY% the configured body, and the content type its
// content_type, application/json for JSON, else the local reply's.
func TestDirectResponseBodyFormat(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ['*']
  routes:
  - {name: text, match: {path: /text}, direct_response: {status: 200, body: {inline_string: hi}, body_format: {text_format: "[%LOCAL_REPLY_BODY%] %REQ(:PATH)%"}}}
  - {name: json, match: {path: /json}, direct_response: {status: 503, body: {inline_string: down}, body_format: {json_format: {msg: "%LOCAL_REPLY_BODY%", path: "%REQ(:PATH)%"}}}}
  - {name: html, match: {path: /html}, direct_response: {status: 200, body: {inline_string: x}, body_format: {text_format: "<b>%LOCAL_REPLY_BODY%</b>", content_type: text/html}}}
  - {name: plain, match: {path: /plain}, direct_response: {status: 200, body: {inline_string: x}}}
`)
	for path, want := range map[string][2]string{
		"/text":  {"[hi] /text", ""},
		"/json":  {`{"msg":"down","path":"/json"}` + "\n", "application/json"},
		"/html":  {"<b>x</b>", "text/html"},
		"/plain": {"x", ""},
	} {
		r := table.Match("h", path)
		e := &accesslog.Entry{Path: path}
		body, ct := r.Direct.Render(e)
		if body != want[0] || ct != want[1] {
			t.Errorf("%s: %q %q, want %q %q", path, body, ct, want[0], want[1])
		}
		if e.LocalReplyBody != "" {
			t.Errorf("%s: the entry keeps %q", path, e.LocalReplyBody)
		}
	}
}

// TestBodyBufferLimit checks the precedence of request_body_buffer_limit
// and per_request_buffer_limit_bytes, the route's over its virtual
// host's field by field.
func TestBodyBufferLimit(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: [v]
  request_body_buffer_limit: 100000
  routes:
  - {name: own, match: {path: /own}, request_body_buffer_limit: 5, route: {cluster: c}}
  - {name: per, match: {path: /per}, per_request_buffer_limit_bytes: 10, route: {cluster: c}}
  - {name: inherit, match: {path: /inherit}, route: {cluster: c}}
- name: w
  domains: [w]
  per_request_buffer_limit_bytes: 10
  routes:
  - {name: per, match: {path: /per}, route: {cluster: c}}
  - {name: none, match: {path: /none}, per_request_buffer_limit_bytes: 5000, route: {cluster: c}}
- name: x
  domains: ['*']
  routes: [{name: default, match: {prefix: /}, route: {cluster: c}}]
`)
	for _, tc := range []struct {
		host, path string
		want       int
	}{
		{"v", "/own", 5},
		{"v", "/per", 100000}, // the virtual host's request_body_buffer_limit comes first
		{"v", "/inherit", 100000},
		{"w", "/per", 10},
		{"w", "/none", 1024}, // never above the connection's
		{"x", "/", 1024},
	} {
		if got := table.Match(tc.host, tc.path).BodyBufferLimit(1024); got != tc.want {
			t.Errorf("%s%s: %d, want %d", tc.host, tc.path, got, tc.want)
		}
	}
}

// TestNonForwardingAction checks that a non_forwarding_action route
// matches, and names no cluster: the router answers 503 (NC), as Envoy's
// finds none for its empty cluster name.
func TestNonForwardingAction(t *testing.T) {
	table := mustCompile(t, "virtual_hosts: [{name: v, domains: ['*'], routes: [{name: nf, match: {prefix: /}, non_forwarding_action: {}}]}]")
	r := table.Match("h", "/x")
	if r == nil || r.Name != "nf" {
		t.Fatalf("route %v", r)
	}
	if r.ClusterName(0) != "" || r.Direct != nil || r.Redirect != nil || r.ClusterNotFoundStatus != 503 {
		t.Errorf("cluster %q, direct %v, redirect %v, not found status %d", r.ClusterName(0), r.Direct, r.Redirect, r.ClusterNotFoundStatus)
	}
}
