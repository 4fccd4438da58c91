package mutationrules

import (
	"testing"

	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestRulesDecideAsEnvoy(t *testing.T) {
	regex := func(r string) *matcherv3.RegexMatcher { return &matcherv3.RegexMatcher{Regex: r} }
	cases := []struct {
		name  string
		rules *mutationrulesv3.HeaderMutationRules
		op    Op
		hdr   string
		value string
		want  Result
	}{
		{"plain header", nil, Set, "x-a", "v", OK},
		{"routing header", nil, Set, ":authority", "h", Ignore},
		{"host", nil, Set, "host", "h", Ignore},
		{"path set", nil, Set, ":path", "/p", OK},
		{"path append", nil, Append, ":path", "/p", Ignore},
		{"path remove", nil, Remove, ":path", "", Ignore},
		{"system disallowed", &mutationrulesv3.HeaderMutationRules{DisallowSystem: wrapperspb.Bool(true)}, Set, ":path", "/p", Ignore},
		{"system error", &mutationrulesv3.HeaderMutationRules{DisallowSystem: wrapperspb.Bool(true), DisallowIsError: wrapperspb.Bool(true)}, Set, ":path", "/p", Fail},
		{"envoy header", nil, Set, "x-envoy-foo", "v", Ignore},
		{"envoy allowed", &mutationrulesv3.HeaderMutationRules{AllowEnvoy: wrapperspb.Bool(true)}, Set, "x-envoy-foo", "v", OK},
		{"disallow all", &mutationrulesv3.HeaderMutationRules{DisallowAll: wrapperspb.Bool(true)}, Set, "x-a", "v", Ignore},
		{"allow expression beats disallow all", &mutationrulesv3.HeaderMutationRules{DisallowAll: wrapperspb.Bool(true), AllowExpression: regex("x-.*")}, Set, "x-a", "v", OK},
		{"disallow expression wins", &mutationrulesv3.HeaderMutationRules{AllowExpression: regex("x-.*"), DisallowExpression: regex("x-a")}, Set, "x-a", "v", Ignore},
		{"bad value", nil, Set, "x-a", "a\nb", Ignore},
		{"informational status", nil, Set, ":status", "100", Ignore},
		{"final status", nil, Set, ":status", "201", OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compile(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Check(tc.op, tc.hdr, tc.value); got != tc.want {
				t.Errorf("check(%s) = %d, want %d", tc.hdr, got, tc.want)
			}
		})
	}
}
