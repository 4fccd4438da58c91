package router

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/structpb"
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
				got, ok := rl.AppendDescriptor([]DescriptorEntry{{"keep", "me"}}, &DescriptorInput{Request: req, RemoteIP: tc.remote, Cluster: "backend"})
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

// TestRateLimitExpr checks the extension action's CEL descriptors: the
// printed value, skip_if_error, and no descriptor on an error without
// it (a missing header, or response.code, which a request does not have).
func TestRateLimitExpr(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route:
      cluster: backend
      rate_limits:
      - actions:
        - extension:
            name: envoy.rate_limit_descriptors.expr
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor
              descriptor_key: user
              text: request.headers['x-user']
        - extension:
            name: envoy.rate_limit_descriptors.expr
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor
              descriptor_key: big
              text: size(request.path) > 3
      - actions:
        - generic_key: {descriptor_value: g}
        - extension:
            name: envoy.rate_limit_descriptors.expr
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor
              descriptor_key: code
              skip_if_error: true
              text: response.code
`)
	r := table.Match("h", "/")
	type desc = []DescriptorEntry
	for name, tc := range map[string]struct {
		headers []string
		path    string
		want    []desc
	}{
		"values":                        {headers: []string{"x-user", "ann"}, path: "/long", want: []desc{{{"user", "ann"}, {"big", "true"}}, {{"generic_key", "g"}}}},
		"an error drops the descriptor": {path: "/", want: []desc{nil, {{"generic_key", "g"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			req := &Request{Host: "h", Path: tc.path, Method: "GET", Headers: newHeaders(tc.headers...)}
			for i, rl := range r.RateLimits {
				got, ok := rl.AppendDescriptor(nil, &DescriptorInput{Request: req, Cluster: "backend"})
				if ok != (tc.want[i] != nil) {
					t.Errorf("rate limit %d: ok = %v", i, ok)
				}
				if diff := cmp.Diff(tc.want[i], got, cmpopts.EquateEmpty()); diff != "" {
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
		"an extension action without typed_config": {`
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, rate_limits: [{actions: [{extension: {name: x}}]}]}
`, "virtual_hosts[0].routes[0].route.rate_limits[0].actions[0].extension.typed_config: must be set"},
		"an expression that does not parse": {`
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, rate_limits: [{actions: [{extension: {name: x, typed_config: {"@type": type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor, descriptor_key: k, text: "request.headers["}}}]}]}
`, "virtual_hosts[0].routes[0].route.rate_limits[0].actions[0].extension.typed_config.text: ERROR"},
		"an expression descriptor without a key": {`
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, rate_limits: [{actions: [{extension: {name: x, typed_config: {"@type": type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor, text: "1"}}}]}]}
`, "virtual_hosts[0].routes[0].route.rate_limits[0].actions[0].extension.typed_config.descriptor_key: must be set"},
		"an expression descriptor without an expression": {`
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, rate_limits: [{actions: [{extension: {name: x, typed_config: {"@type": type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor, descriptor_key: k}}}]}]}
`, "virtual_hosts[0].routes[0].route.rate_limits[0].actions[0].extension.typed_config.expr_specifier: one of text or parsed is required"},
		"another extension": {`
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, rate_limits: [{actions: [{extension: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}]}]}
`, "virtual_hosts[0].routes[0].route.rate_limits[0].actions[0].extension.typed_config: google.protobuf.Empty is not a rate limit descriptor"},
		"a route's hits_addend with a number and a format": {`
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, rate_limits: [{hits_addend: {number: 2, format: "%BYTES_RECEIVED%"}, actions: [{remote_address: {}}]}]}
`, "virtual_hosts[0].routes[0].route.rate_limits[0].hits_addend: must contain either a format or a number"},
		"a virtual host's negative hits_addend without a number": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{apply_on_stream_done: true, hits_addend: {is_negative_hits: true}, actions: [{remote_address: {}}]}]
`, "virtual_hosts[0].rate_limits[0].hits_addend: must contain either a format or a number"},
		"query_parameters without a descriptor key": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{query_parameters: {query_parameter_name: q}}]}]
`, "virtual_hosts[0].rate_limits[0].actions[0].query_parameters.descriptor_key: must be set"},
		"query_parameter_value_match without matchers": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{query_parameter_value_match: {descriptor_value: x}}]}]
`, "virtual_hosts[0].rate_limits[0].actions[0].query_parameter_value_match.query_parameters: at least one matcher is required"},
		"query_parameter_value_match with a bad matcher": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{query_parameter_value_match: {descriptor_value: x, query_parameters: [{name: a, string_match: {safe_regex: {regex: "("}}}]}}]}]
`, "virtual_hosts[0].rate_limits[0].actions[0].query_parameter_value_match.query_parameters[0].string_match"},
		"remote_address_match with a command operator": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{remote_address_match: {descriptor_value: "%NOPE%", address_matcher: {ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}}}]}]
`, "actions[0].remote_address_match.descriptor_value: "},
		"remote_address_match with a bad range": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{remote_address_match: {descriptor_value: x, address_matcher: {ranges: [{address_prefix: 10.0.0.0, prefix_len: 33}]}}}]}]
`, "actions[0].remote_address_match.address_matcher.ranges[0].prefix_len"},
		"remote_address_match without a matcher": {`
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{remote_address_match: {descriptor_value: x}}]}]
`, "actions[0].remote_address_match.address_matcher: must be set"},
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

// TestRateLimitMoreActions checks source_cluster, masked_remote_address,
// the metadata actions and the limit overrides.
func TestRateLimitMoreActions(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    metadata: {filter_metadata: {rt: {tier: gold}}}
    route:
      cluster: backend
      rate_limits:
      - actions:
        - source_cluster: {}
        - masked_remote_address: {v4_prefix_mask_len: 24, v6_prefix_mask_len: 64}
        limit: {rate_limit: {requests_per_unit: 7, unit: MINUTE}}
      - actions:
        - metadata: {descriptor_key: tier, source: ROUTE_ENTRY, metadata_key: {key: rt, path: [{key: tier}]}}
        - dynamic_metadata: {descriptor_key: user, metadata_key: {key: ns, path: [{key: a}, {key: user}]}}
        limit: {dynamic_metadata: {metadata_key: {key: ns, path: [{key: limit}]}}}
      - actions:
        - metadata: {descriptor_key: plan, metadata_key: {key: ns, path: [{key: plan}]}, default_value: free}
        - metadata: {descriptor_key: absent, metadata_key: {key: ns, path: [{key: nothing}]}, skip_if_absent: true}
      - actions:
        - masked_remote_address: {}
`)
	r := table.Match("h", "/")
	if r == nil || len(r.RateLimits) != 4 {
		t.Fatalf("route %+v", r)
	}
	dyn := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"ns": mustStruct(t, map[string]any{
		"a":     map[string]any{"user": "ann"},
		"limit": map[string]any{"requests_per_unit": 3, "unit": "HOUR"},
	})}}
	type desc = []DescriptorEntry
	tests := map[string]struct {
		remote string
		dyn    *corev3.Metadata
		want   []desc // per rate limit; nil: no descriptor
		limits []*LimitOverride
	}{
		"IPv4 with metadata": {remote: "192.168.1.77", dyn: dyn,
			want: []desc{
				{{"source_cluster", "svc"}, {"masked_remote_address", "192.168.1.0/24"}},
				{{"tier", "gold"}, {"user", "ann"}},
				{{"plan", "free"}},
				{{"masked_remote_address", "192.168.1.77/32"}},
			},
			limits: []*LimitOverride{{7, typev3.RateLimitUnit_MINUTE}, {3, typev3.RateLimitUnit_HOUR}, nil, nil}},
		"IPv6 without dynamic metadata": {remote: "2001:abcd:ef01:2345:6789:abcd:ef01:234",
			want: []desc{
				{{"source_cluster", "svc"}, {"masked_remote_address", "2001:abcd:ef01:2345::/64"}},
				nil,
				{{"plan", "free"}},
				{{"masked_remote_address", "2001:abcd:ef01:2345:6789:abcd:ef01:234/128"}},
			},
			limits: []*LimitOverride{{7, typev3.RateLimitUnit_MINUTE}, nil, nil, nil}},
		"no IP address": {want: []desc{nil, nil, {{"plan", "free"}}, nil},
			limits: []*LimitOverride{{7, typev3.RateLimitUnit_MINUTE}, nil, nil, nil}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := &DescriptorInput{Request: &Request{Host: "h", Path: "/", Method: "GET"}, RemoteIP: tc.remote,
				Cluster: "backend", LocalCluster: "svc", DynamicMetadata: tc.dyn, RouteMetadata: r.Metadata}
			for i, rl := range r.RateLimits {
				got, ok := rl.AppendDescriptor(nil, in)
				if ok != (tc.want[i] != nil) {
					t.Errorf("rate limit %d: ok = %v", i, ok)
				}
				if diff := cmp.Diff(tc.want[i], got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("rate limit %d (-want +got):\n%s", i, diff)
				}
				l, ok := rl.Limit(tc.dyn)
				if ok != (tc.limits[i] != nil) || (ok && l != *tc.limits[i]) {
					t.Errorf("rate limit %d: limit %v %v, want %v", i, l, ok, tc.limits[i])
				}
			}
		})
	}
}

// TestRateLimitQueryActions checks query_parameters and
// query_parameter_value_match: the first occurrence of a parameter, percent
// decoded, and the matchers all accepting the query.
func TestRateLimitQueryActions(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route:
      cluster: backend
      rate_limits:
      - actions:
        - query_parameters: {query_parameter_name: "api key", descriptor_key: key}
        - query_parameters: {query_parameter_name: tenant, descriptor_key: tenant, skip_if_absent: true}
      - actions:
        - query_parameter_value_match:
            descriptor_value: debug
            query_parameters:
            - {name: debug, string_match: {exact: "on"}}
            - {name: user, present_match: true}
      - actions:
        - query_parameter_value_match:
            descriptor_key: nodebug
            descriptor_value: "yes"
            expect_match: false
            query_parameters: [{name: debug}]
`)
	r := table.Match("h", "/")
	if r == nil || len(r.RateLimits) != 3 {
		t.Fatalf("route %+v", r)
	}
	type desc = []DescriptorEntry
	tests := map[string]struct {
		path string
		want []desc // per rate limit; nil: no descriptor
	}{
		"the first value, decoded": {path: "/a?api%20key=k%2F1&tenant=t&api+key=other&api%20key=second&debug=on&user",
			want: []desc{{{"key", "k/1"}, {"tenant", "t"}}, {{"query_match", "debug"}}, nil}},
		"a parameter without '=' has the empty value; skip_if_absent skips": {path: "/a?api%20key&debug=off&user=u",
			want: []desc{{{"key", ""}}, nil, nil}},
		"a missing parameter drops the descriptor": {path: "/a?tenant=t&debug=on",
			want: []desc{nil, nil, nil}},
		"no query": {path: "/a",
			want: []desc{nil, nil, {{"nodebug", "yes"}}}},
		"the fragment is not the query": {path: "/a?x=1#api%20key=k",
			want: []desc{nil, nil, {{"nodebug", "yes"}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			checkDescriptors(t, r.RateLimits, &DescriptorInput{Request: &Request{Host: "h", Path: tc.path, Method: "GET"}}, tc.want)
		})
	}
}

// TestRateLimitRemoteAddressMatch checks remote_address_match: an entry
// when the remote address is in one of the ranges (or, inverted, in none).
func TestRateLimitRemoteAddressMatch(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route:
      cluster: backend
      rate_limits:
      - actions:
        - remote_address_match:
            descriptor_value: internal
            address_matcher: {ranges: [{address_prefix: 10.1.2.3, prefix_len: 16}, {address_prefix: "fd00::", prefix_len: 8}]}
      - actions:
        - remote_address_match:
            descriptor_key: outside
            descriptor_value: "yes"
            default_value: unused
            address_matcher: {invert_match: true, ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}
`)
	r := table.Match("h", "/")
	if r == nil || len(r.RateLimits) != 2 {
		t.Fatalf("route %+v", r)
	}
	type desc = []DescriptorEntry
	tests := map[string]struct {
		remote string
		want   []desc // per rate limit; nil: no descriptor
	}{
		"in a range (host bits of the range cleared)": {remote: "10.1.200.9", want: []desc{{{"remote_address_match", "internal"}}, nil}},
		"IPv6 in a range":                {remote: "fd12::1", want: []desc{{{"remote_address_match", "internal"}}, {{"outside", "yes"}}}},
		"an IPv4-mapped address is IPv4": {remote: "::ffff:10.1.0.1", want: []desc{{{"remote_address_match", "internal"}}, nil}},
		"in no range":                    {remote: "192.168.0.1", want: []desc{nil, {{"outside", "yes"}}}},
		"no IP address":                  {want: []desc{nil, nil}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			checkDescriptors(t, r.RateLimits, &DescriptorInput{Request: &Request{Host: "h", Path: "/", Method: "GET"}, RemoteIP: tc.remote}, tc.want)
		})
	}
}

// checkDescriptors compares the descriptor each rate limit makes of in
// with want (nil: none).
func checkDescriptors(t *testing.T, rls []*RateLimit, in *DescriptorInput, want [][]DescriptorEntry) {
	t.Helper()
	for i, rl := range rls {
		got, ok := rl.AppendDescriptor(nil, in)
		if ok != (want[i] != nil) {
			t.Errorf("rate limit %d: ok = %v", i, ok)
		}
		if diff := cmp.Diff(want[i], got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("rate limit %d (-want +got):\n%s", i, diff)
		}
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
