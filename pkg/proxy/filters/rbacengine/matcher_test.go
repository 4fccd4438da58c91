package rbacengine

import (
	"strings"
	"testing"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// compileMatcherJSON compiles a matcher written in JSON for the filter.
func compileMatcherJSON(t *testing.T, js string, f Filter) (*Engine, error) {
	t.Helper()
	m := &xdsmatcherv3.Matcher{}
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatalf("unmarshal %s: %v", js, err)
	}
	return CompileMatcher(m, f)
}

// onNoMatch is a matcher of only on_no_match, an Action of the JSON
// fields.
func onNoMatch(action string) string {
	return `{"on_no_match":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action"` + action + `}}}}`
}

func TestMatcherDecisions(t *testing.T) {
	for name, tc := range map[string]struct {
		js               string
		allowed, matched bool
		policy           string
		hint, hintSet    bool
	}{
		"ALLOW":       {onNoMatch(`,"name":"all","action":"ALLOW"`), true, true, "all", false, false},
		"DENY":        {onNoMatch(`,"name":"none","action":"DENY"`), false, true, "none", false, false},
		"LOG":         {onNoMatch(`,"name":"audit","action":"LOG"`), true, true, "audit", true, true},
		"no result":   {`{}`, false, false, "", false, false},
		"LOG unmatch": {`{"matcher_tree":{"input":{"name":"h","typed_config":{"@type":"type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput","header_name":"x"}},"exact_match_map":{"map":{"1":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"log","action":"LOG"}}}}}},"on_no_match":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"pass","action":"ALLOW"}}}}`, true, true, "pass", false, true},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := compileMatcherJSON(t, tc.js, HTTPFilter)
			if err != nil {
				t.Fatal(err)
			}
			d := e.Evaluate(request())
			hint, set := d.AccessLogHint()
			if d.Allowed != tc.allowed || d.Matched != tc.matched || d.Policy != tc.policy || hint != tc.hint || set != tc.hintSet {
				t.Errorf("decision %+v (hint %v set %v), want allowed %v matched %v policy %q hint %v set %v", d, hint, set, tc.allowed, tc.matched, tc.policy, tc.hint, tc.hintSet)
			}
			if !d.Allowed {
				want := "rbac_access_denied_matched_policy[" + map[bool]string{true: tc.policy, false: "none"}[tc.matched] + "]"
				if d.Details() != want {
					t.Errorf("details %q, want %q", d.Details(), want)
				}
			}
		})
	}
}

func TestMatcherNeeds(t *testing.T) {
	tree := func(input string) string {
		return `{"matcher_tree":{"input":{"name":"i","typed_config":{"@type":"type.googleapis.com/` + input + `"}},"exact_match_map":{"map":{}}}}`
	}
	for input, want := range map[string]Needs{
		"envoy.type.matcher.v3.HttpRequestHeaderMatchInput\",\"header_name\":\"x": 0,
		"envoy.extensions.matching.common_inputs.network.v3.DestinationPortInput": NeedAddresses,
		"envoy.extensions.matching.common_inputs.network.v3.ServerNameInput":      NeedTLS,
		"envoy.extensions.matching.common_inputs.ssl.v3.SubjectInput":             NeedTLS,
	} {
		e, err := compileMatcherJSON(t, tree(input), HTTPFilter)
		if err != nil {
			t.Fatal(err)
		}
		if e.Needs() != want {
			t.Errorf("%s: needs %b, want %b", input, e.Needs(), want)
		}
	}
}

func TestMatcherErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		js   string
		f    Filter
		want string
	}{
		"no name":        {onNoMatch(`,"action":"ALLOW"`), HTTPFilter, "on_no_match.action.typed_config: invalid Action.Name"},
		"unknown action": {onNoMatch(`,"name":"x","action":7`), HTTPFilter, "on_no_match.action.typed_config.action: unknown action 7"},
		"header on a connection": {`{"matcher_tree":{"input":{"name":"h","typed_config":{"@type":"type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput","header_name":"x"}},"exact_match_map":{"map":{}}}}`,
			NetworkFilter, "matcher_tree.input.typed_config: the RBAC network filter cannot match envoy.type.matcher.v3.HttpRequestHeaderMatchInput"},
		"filter state on HTTP": {`{"matcher_tree":{"input":{"name":"f","typed_config":{"@type":"type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.FilterStateInput","key":"k"}},"exact_match_map":{"map":{}}}}`,
			HTTPFilter, "the RBAC HTTP filter cannot match on envoy.extensions.matching.common_inputs.network.v3.FilterStateInput"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compileMatcherJSON(t, tc.js, tc.f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
