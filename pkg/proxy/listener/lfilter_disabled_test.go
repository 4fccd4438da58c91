package listener

import (
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

func portRange(lo, hi int32) *listenerv3.ListenerFilterChainMatchPredicate {
	return &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_DestinationPortRange{
		DestinationPortRange: &typev3.Int32Range{Start: lo, End: hi}}}
}

func TestFilterDisabledPredicates(t *testing.T) {
	set := func(rules ...*listenerv3.ListenerFilterChainMatchPredicate) *listenerv3.ListenerFilterChainMatchPredicate_MatchSet {
		return &listenerv3.ListenerFilterChainMatchPredicate_MatchSet{Rules: rules}
	}
	for _, c := range []struct {
		name string
		p    *listenerv3.ListenerFilterChainMatchPredicate
		// in and out are ports the predicate matches and does not.
		in, out []int
	}{
		{"range is half-open", portRange(80, 82), []int{80, 81}, []int{79, 82, -1}},
		{"any", &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_AnyMatch{AnyMatch: true}}, []int{1, 65535, -1}, nil},
		{"not", &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_NotMatch{NotMatch: portRange(80, 81)}}, []int{81, -1}, []int{80}},
		{"or", &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_OrMatch{OrMatch: set(portRange(80, 81), portRange(443, 444))}}, []int{80, 443}, []int{81, 442}},
		{"and", &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_AndMatch{AndMatch: set(portRange(80, 90), portRange(85, 100))}}, []int{85, 89}, []int{80, 90}},
	} {
		p, err := compilePredicate(c.p, "filter_disabled", 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, port := range c.in {
			if !p(port) {
				t.Errorf("%s: port %d not matched", c.name, port)
			}
		}
		for _, port := range c.out {
			if p(port) {
				t.Errorf("%s: port %d matched", c.name, port)
			}
		}
	}
}

func TestFilterDisabledRefused(t *testing.T) {
	deep := portRange(1, 2)
	for range maxPredicateDepth + 1 {
		deep = &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_NotMatch{NotMatch: deep}}
	}
	for _, c := range []struct {
		p    *listenerv3.ListenerFilterChainMatchPredicate
		want string
	}{
		{portRange(90, 80), "filter_disabled.destination_port_range: start 90 must be below end 80"},
		{&listenerv3.ListenerFilterChainMatchPredicate{}, "filter_disabled: a rule is required"},
		{&listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_OrMatch{OrMatch: &listenerv3.ListenerFilterChainMatchPredicate_MatchSet{
			Rules: []*listenerv3.ListenerFilterChainMatchPredicate{portRange(1, 2), {}}}}}, "filter_disabled.or_match.rules[1]: a rule is required"},
		{deep, "nested more than"},
	} {
		if _, err := compilePredicate(c.p, "filter_disabled", 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
