package rbac

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// TestTrackPerRuleStats checks Envoy's per-policy counters: under the
// rules' and shadow rules' prefixes, only for a decision naming a policy,
// and per route as the route's track_per_rule_stats says.
func TestTrackPerRuleStats(t *testing.T) {
	f, c := compileFilter(t, `{
		"rules":{"action":"ALLOW","policies":{"gets":{"permissions":[{"header":{"name":":method","string_match":{"exact":"GET"}}}],"principals":[{"any":true}]}}},
		"rules_stat_prefix":"live.",
		"shadow_rules":{"action":"DENY","policies":{"posts":{"permissions":[{"header":{"name":":method","string_match":{"exact":"POST"}}}],"principals":[{"any":true}]}}},
		"shadow_rules_stat_prefix":"dry_",
		"track_per_rule_stats":true}`)
	for _, m := range []string{"GET", "GET", "POST"} {
		f.DecodeHeaders(httpfiltertest.NewStream(m, "/"))
	}
	// A route whose rules do not track: the filter's counters only.
	s := httpfiltertest.NewStream("GET", "/r")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"rbac": {routeConfig(t, `{"rbac":{"rules":{"action":"DENY","policies":{"gets":{"permissions":[{"any":true}],"principals":[{"any":true}]}}}}}`)}}
	f.DecodeHeaders(s)
	// A route whose rules track, under the filter's prefixes.
	s = httpfiltertest.NewStream("GET", "/t")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"rbac": {routeConfig(t, `{"rbac":{"track_per_rule_stats":true,"rules":{"action":"DENY","policies":{"all":{"permissions":[{"any":true}],"principals":[{"any":true}]}}}}}`)}}
	f.DecodeHeaders(s)
	for name, want := range map[string]uint64{
		"http.in.rbac.live.policy.gets.allowed":         2,
		"http.in.rbac.live.policy.gets.denied":          0,
		"http.in.rbac.live.policy.all.denied":           1,
		"http.in.rbac.live.allowed":                     2,
		"http.in.rbac.live.denied":                      3,
		"http.in.rbac.dry_.policy.posts.shadow_denied":  1,
		"http.in.rbac.dry_.policy.posts.shadow_allowed": 0,
	} {
		if got := c.store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
