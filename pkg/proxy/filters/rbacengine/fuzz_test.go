package rbacengine

import (
	"testing"

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
