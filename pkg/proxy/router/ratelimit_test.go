package router

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRateLimitDescriptors checks the descriptors the rate limit actions
// make of requests, as Envoy's populateDescriptors makes them.
func TestRateLimitDescriptors(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  rate_limits:
  - actions: [{generic_key: {descriptor_value: vh}}]
  routes:
  - match: {prefix: /}
    route:
      cluster: backend
      include_vh_rate_limits: true
      rate_limits:
      - stage: 1
        disable_key: "off"
        actions:
        - generic_key: {descriptor_value: gk, descriptor_key: k}
        - request_headers: {header_name: X-User, descriptor_key: user}
        - remote_address: {}
        - destination_cluster: {}
      - actions:
        - request_headers: {header_name: x-tenant, descriptor_key: tenant, skip_if_absent: true}
        - header_value_match:
            descriptor_value: get
            headers: [{name: ":method", string_match: {exact: GET}}]
      - actions:
        - header_value_match:
            descriptor_value: not-post
            descriptor_key: m
            expect_match: false
            headers: [{name: ":method", string_match: {exact: POST}}]
`)
	r := table.Match("h", "/")
	if r == nil || len(r.RateLimits) != 3 || len(r.VirtualHost.RateLimits) != 1 || !r.IncludeVHRateLimits {
		t.Fatalf("route %+v", r)
	}
	if rl := r.RateLimits[0]; rl.Stage != 1 || rl.DisableKey != "off" {
		t.Errorf("stage %d, disable_key %q", rl.Stage, rl.DisableKey)
	}
	type desc = []DescriptorEntry
	tests := map[string]struct {
		method  string
		headers []string
		remote  string
		want    []desc // per rate limit; nil: no descriptor
	}{
		"every action": {method: "GET", headers: []string{"x-user", "ann", "x-tenant", "t1"}, remote: "10.0.0.1",
			want: []desc{
				{{"k", "gk"}, {"user", "ann"}, {"remote_address", "10.0.0.1"}, {"destination_cluster", "backend"}},
				{{"tenant", "t1"}, {"header_match", "get"}},
				{{"m", "not-post"}},
			}},
		"a missing header drops the descriptor; skip_if_absent skips the entry": {method: "GET", remote: "10.0.0.1",
			want: []desc{nil, {{"header_match", "get"}}, {{"m", "not-post"}}}},
		"header_value_match that does not match": {method: "POST", headers: []string{"x-user", "ann"},
			want: []desc{nil, nil, nil}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := &Request{Host: "h", Path: "/", Method: tc.method, Headers: newHeaders(tc.headers...)}
			for i, rl := range r.RateLimits {
				got, ok := rl.AppendDescriptor([]DescriptorEntry{{"keep", "me"}}, req, tc.remote, "backend")
				want := append(desc{{"keep", "me"}}, tc.want[i]...)
				if ok != (tc.want[i] != nil) {
					t.Errorf("rate limit %d: ok = %v", i, ok)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("rate limit %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestRateLimitErrors(t *testing.T) {
	tests := map[string]struct {
		yaml, want string
	}{
		"no actions": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{stage: 1}]
`, "virtual_hosts[0].rate_limits[0].actions: at least one action is required"},
		"an unsupported action": {`
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, rate_limits: [{actions: [{source_cluster: {}}]}]}
`, "virtual_hosts[0].routes[0].route.rate_limits[0].actions[0].source_cluster: not supported by Outrigger"},
		"a bad header matcher": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{header_value_match: {descriptor_value: x, headers: [{name: a, safe_regex_match: {regex: "("}}]}}]}]
`, "virtual_hosts[0].rate_limits[0].actions[0].header_value_match.headers[0]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(parseRC(t, tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
