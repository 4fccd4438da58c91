package tap

import (
	"strings"
	"testing"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/matcher/v3"
	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// predicate parses a MatchPredicate from YAML.
func predicate(t *testing.T, y string) *matcherv3.MatchPredicate {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var mp matcherv3.MatchPredicate
	if err := protojson.Unmarshal(js, &mp); err != nil {
		t.Fatal(err)
	}
	return &mp
}

func TestMatcher(t *testing.T) {
	x := &Exchange{
		RequestHeaders:   Headers{{":path", "/api"}, {":method", "GET"}, {"x-a", "1"}, {"x-a", "2"}},
		RequestTrailers:  Headers{{"x-checksum", "abc"}},
		ResponseHeaders:  Headers{{":status", "503"}},
		ResponseTrailers: Headers{{"grpc-status", "14"}},
	}
	cases := map[string]struct {
		pred string
		want bool
	}{
		"any":                    {`any_match: true`, true},
		"request header":         {`http_request_headers_match: {headers: [{name: x-a, string_match: {exact: "1,2"}}]}`, true},
		"request pseudo-header":  {`http_request_headers_match: {headers: [{name: ":path", string_match: {prefix: /api}}]}`, true},
		"request header missing": {`http_request_headers_match: {headers: [{name: x-b}]}`, false},
		"request trailer":        {`http_request_trailers_match: {headers: [{name: x-checksum, string_match: {exact: abc}}]}`, true},
		"request trailer absent": {`http_request_trailers_match: {headers: [{name: x-a}]}`, false},
		"response header":        {`http_response_headers_match: {headers: [{name: ":status", string_match: {exact: "503"}}]}`, true},
		"response trailer":       {`http_response_trailers_match: {headers: [{name: grpc-status, string_match: {exact: "0"}}]}`, false},
		"not":                    {`not_match: {http_request_headers_match: {headers: [{name: x-b}]}}`, true},
		"and": {`and_match: {rules: [{any_match: true},
			{http_response_trailers_match: {headers: [{name: grpc-status, string_match: {exact: "0"}}]}}]}`, false},
		"or": {`or_match: {rules: [{http_request_headers_match: {headers: [{name: x-b}]}},
			{http_response_trailers_match: {headers: [{name: grpc-status, string_match: {exact: "14"}}]}}]}`, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := CompileMatch(predicate(t, tc.pred), "match")
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Matches(x); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatcherRefused(t *testing.T) {
	cases := map[string]struct{ pred, path string }{
		"body no pattern": {`http_request_generic_body_match: {bytes_limit: 3}`, "match.http_request_generic_body_match.patterns"},
		"empty pattern":   {`http_response_generic_body_match: {patterns: [{string_match: x}, {}]}`, "match.http_response_generic_body_match.patterns[1]"},
		"trailer matcher": {`http_request_trailers_match: {headers: [{name: x, string_match: {safe_regex: {regex: "("}}}]}`, "match.http_request_trailers_match"},
		"one rule":        {`and_match: {rules: [{any_match: true}]}`, "match.and_match.rules"},
		"nested":          {`or_match: {rules: [{any_match: true}, {not_match: {http_request_generic_body_match: {}}}]}`, "match.or_match.rules[1].not_match.http_request_generic_body_match"},
		"empty":           {`{}`, "match:"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CompileMatch(predicate(t, tc.pred), "match")
			if err == nil || !strings.HasPrefix(err.Error(), tc.path) {
				t.Errorf("error %v, want one naming %s", err, tc.path)
			}
		})
	}
}

func TestLegacyMatchConfig(t *testing.T) {
	//lint:ignore SA1019 the deprecated field is the one under test
	tc := &tapv3.TapConfig{MatchConfig: &tapv3.MatchPredicate{Rule: &tapv3.MatchPredicate_NotMatch{
		NotMatch: &tapv3.MatchPredicate{Rule: &tapv3.MatchPredicate_AnyMatch{AnyMatch: true}}}}}
	m, err := compileTapMatch(tc, "tap_config")
	if err != nil {
		t.Fatal(err)
	}
	if m.Matches(&Exchange{}) {
		t.Error("not_match of any_match matched")
	}
}

func TestGenericBodyMatch(t *testing.T) {
	cases := map[string]struct {
		pred   string
		pieces []string
		want   bool
	}{
		"all patterns":        {`http_request_generic_body_match: {patterns: [{string_match: needle}, {binary_match: "AAE="}]}`, []string{"hay\x00\x01", "needle"}, true},
		"one missing":         {`http_request_generic_body_match: {patterns: [{string_match: needle}, {string_match: pin}]}`, []string{"a needle"}, false},
		"across pieces":       {`http_request_generic_body_match: {patterns: [{string_match: needle}]}`, []string{"nee", "d", "le"}, true},
		"beyond bytes_limit":  {`http_request_generic_body_match: {bytes_limit: 5, patterns: [{string_match: needle}]}`, []string{"12", "needle"}, false},
		"within bytes_limit":  {`http_request_generic_body_match: {bytes_limit: 8, patterns: [{string_match: needle}]}`, []string{"12", "needle", "x"}, true},
		"the other direction": {`http_response_generic_body_match: {patterns: [{string_match: needle}]}`, []string{"needle"}, false},
		"not":                 {`not_match: {http_request_generic_body_match: {patterns: [{string_match: needle}]}}`, []string{"hay"}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := CompileMatch(predicate(t, tc.pred), "match")
			if err != nil {
				t.Fatal(err)
			}
			bodies := m.bodyMatchers(nil)
			x := &Exchange{}
			for _, p := range tc.pieces {
				x.feed(bodies, true, []byte(p))
			}
			if got := m.Matches(x); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}
