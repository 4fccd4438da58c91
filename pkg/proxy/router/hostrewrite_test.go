package router

import "testing"

func TestRewriteHost(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {match: {prefix: /literal}, route: {cluster: c, host_rewrite_literal: fixed.local, append_x_forwarded_host: true}}
  - {match: {prefix: /header}, route: {cluster: c, host_rewrite_header: X-Target-Host}}
  - match: {prefix: /regex}
    route:
      cluster: c
      host_rewrite_path_regex: {pattern: {regex: "^/regex/([^/]+)/.*$"}, substitution: '\1.svc'}
  - {match: {prefix: /auto}, route: {cluster: c, auto_host_rewrite: true}}
  - {match: {prefix: /}, route: {cluster: c}}
`)
	tests := map[string]struct {
		path    string
		headers *headers
		want    string
		auto    bool
		xfh     bool
	}{
		"literal":                   {path: "/literal", want: "fixed.local", xfh: true},
		"header":                    {path: "/header", headers: newHeaders("x-target-host", "from.header"), want: "from.header"},
		"header sent twice":         {path: "/header", headers: newHeaders("x-target-host", "first", "x-target-host", "second"), want: "first"},
		"header absent":             {path: "/header", headers: newHeaders("other", "x")},
		"header empty":              {path: "/header", headers: newHeaders("x-target-host", "")},
		"regex":                     {path: "/regex/users/list?q=1", want: "users.svc"},
		"regex ignores the query":   {path: "/regex/a/b?host=evil", want: "a.svc"},
		"regex without a match":     {path: "/regex", want: "/regex"},
		"auto waits for the host":   {path: "/auto", auto: true},
		"no rewrite":                {path: "/other"},
		"header without any header": {path: "/header"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := table.Match("h", tc.path)
			var h HeaderGetter
			if tc.headers != nil {
				h = tc.headers
			}
			if got := r.RewriteHost(h, tc.path); got != tc.want {
				t.Errorf("RewriteHost = %q, want %q", got, tc.want)
			}
			if r.AutoHostRewrite != tc.auto {
				t.Errorf("AutoHostRewrite = %v, want %v", r.AutoHostRewrite, tc.auto)
			}
			if r.AppendXForwardedHost != tc.xfh {
				t.Errorf("AppendXForwardedHost = %v, want %v", r.AppendXForwardedHost, tc.xfh)
			}
		})
	}
}
