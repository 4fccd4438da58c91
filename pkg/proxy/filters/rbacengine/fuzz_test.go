package rbacengine

import (
	"net/netip"
	"testing"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzCompile feeds Compile RBAC configurations (JSON, validated as the
// bootstrap validates them) and evaluates what compiles on a request and
// on a connection: neither panics, and a policy that matched is one of the
// configuration's.
func FuzzCompile(f *testing.F) {
	f.Add(allowIf(anyRule, anyRule), "/a?b")
	f.Add(allowIf(`{"not_rule":{"and_rules":{"rules":[{"url_path":{"path":{"prefix":"/a"}}},{"destination_port_range":{"start":1,"end":9}}]}}}`,
		`{"or_ids":{"ids":[{"authenticated":{"principal_name":{"safe_regex":{"regex":"a.*"}}}},{"remote_ip":{"address_prefix":"::","prefix_len":0}}]}}`), "/")
	f.Add(`{"action":"DENY","policies":{"a":{"permissions":[{"or_rules":{"rules":[{"url_path":{"path":{"exact":"/x"}}},{"url_path":{"path":{"exact":"/y"}}}]}}],"principals":[{"not_id":{"any":true}}]}}}`, "/x")
	f.Add(allowIf(`{"metadata":{"filter":"f","path":[{"key":"k"}],"value":{"list_match":{"one_of":{"present_match":true}}},"invert":true}}`, `{"header":{"name":":method","string_match":{"exact":"GET"}}}`), "")
	f.Fuzz(func(t *testing.T, js, path string) {
		r := &rbacv3.RBAC{}
		if protojson.Unmarshal([]byte(js), r) != nil || r.ValidateAll() != nil {
			t.Skip()
		}
		e, err := Compile(r)
		if err != nil {
			return
		}
		for _, in := range []*Input{withPeer(request(), "spiffe://x", "b.example", "b"), {}} {
			if in.Request != nil {
				in.Request.Path = path
			}
			d := e.Evaluate(in)
			if d.Matched && r.GetPolicies()[d.Policy] == nil {
				t.Fatalf("matched policy %q is not configured", d.Policy)
			}
			if !d.Matched && d.Details() != "rbac_access_denied_matched_policy[none]" {
				t.Fatalf("details %q without a match", d.Details())
			}
		}
	})
}

// FuzzCompileMatcher feeds CompileMatcher matchers (JSON, validated as
// the bootstrap validates them) and evaluates what compiles on a TLS
// request, a plaintext one and an empty connection: nothing panics, and a
// denial names its action or none.
func FuzzCompileMatcher(f *testing.F) {
	f.Add(`{"on_no_match":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"x","action":"DENY"}}}}`, "10.1.2.3")
	f.Add(`{"matcher_tree":{"input":{"name":"i","typed_config":{"@type":"type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.SourceIPInput"}},
		"custom_match":{"name":"ip","typed_config":{"@type":"type.googleapis.com/xds.type.matcher.v3.IPMatcher","range_matchers":[
		{"ranges":[{"address_prefix":"10.0.0.0","prefix_len":8}],"exclusive":true,"on_match":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"ten","action":"ALLOW"}}}}]}}}}`, "10.9.9.9")
	f.Add(`{"matcher_list":{"matchers":[{"predicate":{"or_matcher":{"predicate":[
		{"single_predicate":{"input":{"name":"s","typed_config":{"@type":"type.googleapis.com/envoy.extensions.matching.common_inputs.ssl.v3.UriSanInput"}},"value_match":{"prefix":"spiffe://"}}},
		{"single_predicate":{"input":{"name":"h","typed_config":{"@type":"type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput","header_name":"x-team"}},"value_match":{"exact":"blue"}}}]}},
		"on_match":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"y","action":"LOG"}}}}]}}`, "::1")
	f.Fuzz(func(t *testing.T, js, source string) {
		m := &xdsmatcherv3.Matcher{}
		if protojson.Unmarshal([]byte(js), m) != nil || m.ValidateAll() != nil {
			t.Skip()
		}
		for _, filter := range []Filter{HTTPFilter, NetworkFilter} {
			e, err := CompileMatcher(m, filter)
			if err != nil {
				continue
			}
			plain := request()
			plain.Source, _ = netip.ParseAddr(source)
			for _, in := range []*Input{withPeer(request(), "spiffe://x", "b.example", "b"), plain, {}} {
				d := e.Evaluate(in)
				if !d.Allowed && !d.Matched && d.Details() != "rbac_access_denied_matched_policy[none]" {
					t.Fatalf("details %q without a match", d.Details())
				}
				if d.Matched && d.Policy == "" {
					t.Fatal("a match without an action name")
				}
			}
		}
	})
}
