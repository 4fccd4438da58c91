package httpmatch

import (
	"strings"
	"testing"
)

// ipMatcher is a matcher_tree over the field "ip" whose custom_match is
// an IPMatcher of the range matchers, and on_no_match "none".
func ipMatcher(rangeMatchers string) string {
	return `{"matcher_tree": {"input": ` + field("ip") + `, "custom_match": {"name": "ip", "typed_config": {
	  "@type": "type.googleapis.com/xds.type.matcher.v3.IPMatcher", "range_matchers": [` + rangeMatchers + `]}}},
	 "on_no_match": ` + action("none") + `}`
}

func ipIs(v string) fields { return fields{values: map[string]string{"ip": v}} }

// TestIPMatcher checks Envoy's trie matcher: the longest range first,
// then the order of the range matchers; a nested matcher that finds
// nothing lets the next range decide unless that one is exclusive.
func TestIPMatcher(t *testing.T) {
	js := ipMatcher(`
	  {"ranges": [{"address_prefix": "10.0.0.0", "prefix_len": 8}], "on_match": ` + action("ten") + `},
	  {"ranges": [{"address_prefix": "10.1.0.0", "prefix_len": 16}, {"address_prefix": "192.168.0.0", "prefix_len": 16}], "on_match": ` + action("ten-one") + `},
	  {"ranges": [{"address_prefix": "10.1.0.0", "prefix_len": 16}], "on_match": ` + action("second") + `},
	  {"ranges": [{"address_prefix": "10.2.3.0", "prefix_len": 24}], "on_match": {"matcher": {"matcher_list": {"matchers": [
	     {"predicate": ` + is("team", "blue") + `, "on_match": ` + action("blue") + `}]}}}},
	  {"ranges": [{"address_prefix": "10.2.0.0", "prefix_len": 16}], "exclusive": true, "on_match": ` + action("exclusive") + `},
	  {"ranges": [{"address_prefix": "2001:db8::", "prefix_len": 32}], "on_match": ` + action("v6") + `}`)
	blue := ipIs("10.2.3.4")
	blue.values["team"] = "blue"
	runEvaluate(t, js, []evaluateCase{
		{"one range", ipIs("10.9.9.9"), "ten", true, true},
		{"the longest range", ipIs("10.1.2.3"), "ten-one", true, true},
		{"second range of a matcher", ipIs("192.168.1.1"), "ten-one", true, true},
		{"nested matcher", blue, "blue", true, true},
		{"nested finds nothing: the next range, not the exclusive one", ipIs("10.2.3.4"), "ten", true, true},
		{"exclusive first", ipIs("10.2.9.9"), "exclusive", true, true},
		{"IPv6", ipIs("2001:db8::1"), "v6", true, true},
		{"no range", ipIs("172.16.0.1"), "none", true, true},
		{"not an address", ipIs("example.com"), "none", true, true},
		{"absent", fields{}, "none", true, true},
		{"unavailable", fields{unavailable: "ip"}, "", false, false},
	})
}

func TestIPMatcherErrors(t *testing.T) {
	for name, tc := range map[string]struct{ js, want string }{
		"bad address": {ipMatcher(`{"ranges": [{"address_prefix": "10.0.0", "prefix_len": 8}], "on_match": ` + action("x") + `}`),
			`matcher_tree.custom_match.typed_config.range_matchers[0].ranges[0].address_prefix: "10.0.0" is not an IP address`},
		"long prefix": {ipMatcher(`{"ranges": [{"address_prefix": "10.0.0.0", "prefix_len": 33}], "on_match": ` + action("x") + `}`),
			`range_matchers[0].ranges[0].prefix_len: 33 is longer than an IPv4 address`},
		"no ranges": {ipMatcher(`{"on_match": ` + action("x") + `}`),
			`range_matchers[0].ranges: at least one range is required`},
		"no on_match": {ipMatcher(`{"ranges": [{"address_prefix": "10.0.0.0", "prefix_len": 8}]}`),
			`range_matchers[0].on_match: an action or a matcher is required`},
		"other custom matcher": {`{"matcher_tree": {"input": ` + field("ip") + `, "custom_match": {"name": "x", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "x"}}}}`,
			`matcher_tree.custom_match.typed_config: custom matcher google.protobuf.StringValue is not supported by Outrigger (only xds.type.matcher.v3.IPMatcher)`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CompileProbed(parse(t, tc.js), actionName, fieldProbe)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
