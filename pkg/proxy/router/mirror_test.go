package router

import (
	"strings"
	"testing"
)

func TestMirrorPolicies(t *testing.T) {
	table := mustCompile(t, `
request_mirror_policies: [{cluster: global-shadow}]
virtual_hosts:
- name: own
  domains: [own]
  request_mirror_policies: [{cluster: vhost-shadow}]
  routes:
  - match: {prefix: /route}
    route:
      cluster: main
      request_mirror_policies:
      - {cluster: a}
      - {cluster_header: X-Shadow-To, runtime_fraction: {default_value: {numerator: 25}, runtime_key: mirror.b}, disable_shadow_host_suffix_append: true}
      - {cluster: c, host_rewrite_literal: shadow.local}
  - {match: {prefix: /vhost}, route: {cluster: main}}
  - {match: {prefix: /direct}, direct_response: {status: 200}}
- name: inherits
  domains: [inherits]
  routes:
  - {match: {prefix: /}, route: {cluster: main}}
`)
	names := func(r *Route) string {
		var out []string
		for _, p := range r.Mirrors {
			out = append(out, p.Cluster+p.ClusterHeader)
		}
		return strings.Join(out, ",")
	}
	tests := map[string]struct {
		host, path, want string
	}{
		"route level replaces the others": {"own", "/route", "a,x-shadow-to,c"},
		"virtual host level":              {"own", "/vhost", "vhost-shadow"},
		"route configuration level":       {"inherits", "/", "global-shadow"},
		"direct responses mirror nothing": {"own", "/direct", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := table.Match(tc.host, tc.path)
			if r == nil {
				t.Fatal("no route")
			}
			if got := names(r); got != tc.want {
				t.Errorf("mirror clusters = %q, want %q", got, tc.want)
			}
		})
	}

	ps := table.Match("own", "/route").Mirrors
	t.Run("runtime fraction", func(t *testing.T) {
		if !ps[0].Mirrors(nil, 99) {
			t.Error("a policy without runtime_fraction must mirror every request")
		}
		if !ps[1].Mirrors(nil, 124) || ps[1].Mirrors(nil, 125) {
			t.Error("25% default: random%100 < 25 mirrors")
		}
		if ps[1].Mirrors(fakeRuntime{"mirror.b": 0}, 100) {
			t.Error("the runtime key set to 0 must stop mirroring")
		}
	})
	t.Run("cluster header", func(t *testing.T) {
		if got := ps[1].ClusterFor(newHeaders("x-shadow-to", "first", "x-shadow-to", "second")); got != "first" {
			t.Errorf("ClusterFor = %q, want the first value", got)
		}
		if got := ps[1].ClusterFor(newHeaders()); got != "" {
			t.Errorf("ClusterFor without the header = %q, want \"\"", got)
		}
		if got := ps[0].ClusterFor(newHeaders("x-shadow-to", "other")); got != "a" {
			t.Errorf("ClusterFor = %q, want the configured cluster", got)
		}
	})
	t.Run("authority", func(t *testing.T) {
		if got := ps[0].ShadowAuthority("api:8080"); got != "api-shadow:8080" {
			t.Errorf("suffixed = %q", got)
		}
		if got := ps[1].ShadowAuthority("api:8080"); got != "api:8080" {
			t.Errorf("disable_shadow_host_suffix_append = %q", got)
		}
		if got := ps[2].ShadowAuthority("api:8080"); got != "shadow.local" {
			t.Errorf("host_rewrite_literal = %q", got)
		}
	})
}

func TestShadowHost(t *testing.T) {
	tests := map[string]string{
		"example.com":      "example.com-shadow",
		"example.com:8080": "example.com-shadow:8080",
		"10.0.0.1:80":      "10.0.0.1-shadow:80",
		// Envoy splits on ':': an IPv6 literal is not a name and a port.
		"[::1]:80": "[::1]:80-shadow",
		"":         "",
	}
	for in, want := range tests {
		if got := ShadowHost(in); got != want {
			t.Errorf("ShadowHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMirrorHeaderMutations(t *testing.T) {
	table := mustCompile(t, vhost(`{match: {prefix: /}, route: {cluster: main, request_mirror_policies: [{cluster: s, request_headers_mutations: [
  {remove: x-secret},
  {append: {header: {key: x-mirror, value: one}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}},
  {append: {header: {key: x-mirror, value: two}}},
  {remove: x-gone},
  {remove_on_match: {key_matcher: {prefix: x-internal-}}}]}]}}`))
	h := newHeaders("x-secret", "s", "x-internal-a", "1", "x-keep", "k", "x-gone", "g", "x-internal-b", "2")
	table.Match("h", "/").Mirrors[0].MutateHeaders(h, nil)
	if got, want := h.String(), "x-keep: k\nx-mirror: one\nx-mirror: two\n"; got != want {
		t.Errorf("headers after mutations:\n%s\nwant:\n%s", got, want)
	}
}
