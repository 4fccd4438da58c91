package router

import (
	"testing"
	"time"
)

func TestRouteActions(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {name: plain, match: {prefix: /plain}, route: {cluster: backend}}
  - {name: tuned, match: {prefix: /tuned}, route: {cluster: backend, timeout: 2.5s, idle_timeout: 0s, host_rewrite_literal: upstream.local, cluster_not_found_response_code: NOT_FOUND}}
  - {name: no-timeout, match: {prefix: /forever}, route: {cluster: backend, timeout: 0s, idle_timeout: 30s}}
  - {name: direct, match: {prefix: /direct}, direct_response: {status: 418, body: {inline_bytes: dGVh}}}
`)
	tests := map[string]struct {
		path        string
		cluster     string
		timeout     time.Duration
		idle        time.Duration
		idleSet     bool
		hostRewrite string
		notFound    int
	}{
		"defaults":              {path: "/plain", cluster: "backend", timeout: DefaultTimeout, notFound: 503},
		"tuned":                 {path: "/tuned", cluster: "backend", timeout: 2500 * time.Millisecond, idleSet: true, hostRewrite: "upstream.local", notFound: 404},
		"no timeout":            {path: "/forever", cluster: "backend", idle: 30 * time.Second, idleSet: true, notFound: 503},
		"direct has no cluster": {path: "/direct"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := table.Match("h", tc.path)
			if r == nil {
				t.Fatal("no route")
			}
			if got := r.ClusterName(7); got != tc.cluster {
				t.Errorf("ClusterName = %q, want %q", got, tc.cluster)
			}
			if r.Timeout != tc.timeout {
				t.Errorf("Timeout = %v, want %v", r.Timeout, tc.timeout)
			}
			if idle, set := r.IdleTimeout(); idle != tc.idle || set != tc.idleSet {
				t.Errorf("IdleTimeout = %v, %v, want %v, %v", idle, set, tc.idle, tc.idleSet)
			}
			if r.HostRewrite != tc.hostRewrite {
				t.Errorf("HostRewrite = %q, want %q", r.HostRewrite, tc.hostRewrite)
			}
			if r.ClusterNotFoundStatus != tc.notFound {
				t.Errorf("ClusterNotFoundStatus = %d, want %d", r.ClusterNotFoundStatus, tc.notFound)
			}
		})
	}
	if d := table.Match("h", "/direct").Direct; d == nil || d.Status != 418 || d.Body != "tea" {
		t.Errorf("direct response = %+v, want 418 \"tea\"", d)
	}
}

func TestWeightedClusters(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {weighted_clusters: {clusters: [{name: a, weight: 3}, {name: skipped, weight: 0}, {name: b, weight: 1}], total_weight: 4}}
`)
	r := table.Match("h", "/")
	if r.WeightedClusters.Total != 4 {
		t.Fatalf("Total = %d, want 4", r.WeightedClusters.Total)
	}
	// random % 4 in [0, 3) picks a, [3, 4) picks b; a zero weight is
	// never picked.
	tests := map[string]struct {
		random uint64
		want   string
	}{
		"first share start":     {random: 0, want: "a"},
		"first share end":       {random: 2, want: "a"},
		"second share":          {random: 3, want: "b"},
		"wraps around":          {random: 4, want: "a"},
		"largest random number": {random: ^uint64(0), want: "b"}, // 2^64-1 = 3 mod 4
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := r.ClusterName(tc.random); got != tc.want {
				t.Errorf("ClusterName(%d) = %q, want %q", tc.random, got, tc.want)
			}
		})
	}
	counts := map[string]int{}
	for i := range uint64(400) {
		counts[r.ClusterName(i)]++
	}
	if counts["a"] != 300 || counts["b"] != 100 || counts["skipped"] != 0 {
		t.Errorf("over 400 consecutive values, picks = %v, want a:300 b:100", counts)
	}
}

func TestRewritePath(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {match: {prefix: /old/}, route: {cluster: c, prefix_rewrite: /new/}}
  - {match: {prefix: /Strip, case_sensitive: false}, route: {cluster: c, prefix_rewrite: /}}
  - {match: {path: /exact}, route: {cluster: c, prefix_rewrite: /replaced}}
  - {match: {path_separated_prefix: /svc}, route: {cluster: c, prefix_rewrite: /backend}}
  - {match: {safe_regex: {regex: "/v[0-9]+/.*"}}, route: {cluster: c, regex_rewrite: {pattern: {regex: "^/v([0-9]+)/(.*)$"}, substitution: "/\\2?version=\\1"}}}
  - {match: {prefix: /all-slashes}, route: {cluster: c, regex_rewrite: {pattern: {regex: "/"}, substitution: "_"}}}
  - {match: {prefix: /dollar}, route: {cluster: c, regex_rewrite: {pattern: {regex: "dollar"}, substitution: "$1\\\\"}}}
  - {match: {prefix: /api/}, route: {cluster: c, regex_rewrite: {pattern: {regex: "^/api/v([0-9]+)/(.*)$"}, substitution: "/\\2/v\\1"}}}
  - {match: {prefix: /whole}, route: {cluster: c, regex_rewrite: {pattern: {regex: "h(o)"}, substitution: "[\\0\\1]"}}}
  - {match: {prefix: /}, route: {cluster: c}}
`)
	tests := map[string]struct{ path, want string }{
		"prefix":                            {path: "/old/a/b", want: "/new/a/b"},
		"prefix keeps the query":            {path: "/old/a?x=/old/", want: "/new/a?x=/old/"},
		"case-insensitive prefix":           {path: "/STRIP/me", want: "//me"},
		"exact path replaced, query kept":   {path: "/exact?q=1", want: "/replaced?q=1"},
		"separated prefix":                  {path: "/svc/x", want: "/backend/x"},
		"separated prefix alone":            {path: "/svc", want: "/backend"},
		"regex with groups":                 {path: "/v2/users", want: "/users?version=2"},
		"regex replaces every match":        {path: "/all-slashes/a/b?c=/", want: "_all-slashes_a_b?c=/"},
		"dollar and backslash are literal":  {path: "/dollar", want: "/$1\\"},
		"groups reordered (README example)": {path: "/api/v2/users?x=1", want: "/users/v2?x=1"},
		"group 0 is the whole match":        {path: "/whole", want: "/w[hoo]le"},
		"no rewrite":                        {path: "/other?x", want: "/other?x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := table.Match("h", tc.path)
			if got := r.RewritePath(tc.path); got != tc.want {
				t.Errorf("RewritePath(%q) = %q, want %q", tc.path, got, tc.want)
			}
			if got, want := r.RewritesPath(), name != "no rewrite"; got != want {
				t.Errorf("RewritesPath() = %v, want %v", got, want)
			}
		})
	}
}

func TestRedirectLocation(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {match: {prefix: /https}, redirect: {https_redirect: true}}
  - {match: {prefix: /scheme}, redirect: {scheme_redirect: FTP, response_code: FOUND}}
  - {match: {prefix: /host}, redirect: {host_redirect: new.example, response_code: SEE_OTHER}}
  - {match: {prefix: /port}, redirect: {port_redirect: 8443, response_code: TEMPORARY_REDIRECT}}
  - {match: {prefix: /pathq}, redirect: {path_redirect: "/elsewhere?fixed=1", strip_query: true}}
  - {match: {prefix: /path}, redirect: {path_redirect: /elsewhere, response_code: PERMANENT_REDIRECT}}
  - {match: {prefix: /relative}, redirect: {path_redirect: "relative"}}
  - {match: {prefix: /strip}, redirect: {strip_query: true}}
  - {match: {prefix: /pre/}, redirect: {prefix_rewrite: /post/}}
  - {match: {prefix: /re/}, redirect: {regex_rewrite: {pattern: {regex: "^/re/(.*)"}, substitution: "/again/\\1"}, strip_query: true}}
`)
	tests := map[string]struct {
		host, path, scheme string
		headers            []string
		want               string
		status             int
	}{
		"https redirect":                    {host: "a.example", path: "/https/x?y=1", scheme: "http", want: "https://a.example/https/x?y=1", status: 301},
		"https redirect drops port 80":      {host: "a.example:80", path: "/https", headers: []string{"x-forwarded-proto", "http"}, want: "https://a.example/https", status: 301},
		"https redirect keeps other ports":  {host: "a.example:8080", path: "/https", headers: []string{"x-forwarded-proto", "http"}, want: "https://a.example:8080/https", status: 301},
		"same scheme keeps port 80":         {host: "a.example:80", path: "/host-no", headers: []string{"x-forwarded-proto", "https"}, want: "https://new.example/host-no", status: 303},
		"scheme redirect, lower-cased":      {host: "a.example", path: "/scheme", scheme: "http", want: "ftp://a.example/scheme", status: 302},
		"forwarded proto beats :scheme":     {host: "a.example", path: "/strip", scheme: "http", headers: []string{"x-forwarded-proto", "https"}, want: "https://a.example/strip", status: 301},
		"host redirect":                     {host: "a.example:9000", path: "/host/x", scheme: "http", want: "http://new.example/host/x", status: 303},
		"port redirect replaces the port":   {host: "a.example:9000", path: "/port", scheme: "https", want: "https://a.example:8443/port", status: 307},
		"port redirect on a bracketed ipv6": {host: "[::1]:9000", path: "/port", scheme: "https", want: "https://[::1]:8443/port", status: 307},
		"path redirect keeps the query":     {host: "a", path: "/path?x=1", scheme: "http", want: "http://a/elsewhere?x=1", status: 308},
		"path redirect with a query wins":   {host: "a", path: "/pathq?x=1", scheme: "http", want: "http://a/elsewhere?fixed=1", status: 301},
		"relative path gets a slash":        {host: "a", path: "/relative", scheme: "http", want: "http://a/relative", status: 301},
		"strip query":                       {host: "a", path: "/strip/x?y=1", scheme: "http", want: "http://a/strip/x", status: 301},
		"prefix rewrite":                    {host: "a", path: "/pre/x?y=1", scheme: "http", want: "http://a/post/x?y=1", status: 301},
		"regex rewrite then strip query":    {host: "a", path: "/re/x?y=1", scheme: "http", want: "http://a/again/x", status: 301},
		"no scheme known defaults to http":  {host: "a", path: "/strip", want: "http://a/strip", status: 301},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := &Request{Host: tc.host, Path: tc.path, Scheme: tc.scheme, Headers: newHeaders(tc.headers...)}
			r := table.MatchRequest(req)
			if r == nil || r.Redirect == nil {
				t.Fatalf("route for %q is not a redirect", tc.path)
			}
			if got := r.RedirectLocation(req, nil); got != tc.want {
				t.Errorf("RedirectLocation = %q, want %q", got, tc.want)
			}
			if r.Redirect.Status != tc.status {
				t.Errorf("Status = %d, want %d", r.Redirect.Status, tc.status)
			}
		})
	}
	if got := table.Match("a", "/https").RewritePath("/https"); got != "/https" {
		t.Errorf("a redirect route rewrote the upstream path to %q", got)
	}
}
