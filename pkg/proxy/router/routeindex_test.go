package router

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestRouteIndexAgreesWithScan checks the route index against the linear
// scan of every route (Envoy's first-match rule) on random tables and
// requests: prefixes, exact paths, path_separated_prefix, regexes with and
// without literal prefixes, case-insensitive matchers, header matchers,
// runtime fractions and connect_matcher, over paths drawn from a small
// alphabet so that near misses (a longer segment, a missing '/', another
// case) are frequent. The seed is fixed: the test is repeatable.
func TestRouteIndexAgreesWithScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2026))
	var indexed, matched, keyedWins int
	for table := range 300 {
		rc := &routev3.RouteConfiguration{Name: "random"}
		vh := &routev3.VirtualHost{Name: "vh", Domains: []string{"*"}}
		for i := range 1 + rng.IntN(24) {
			vh.Routes = append(vh.Routes, &routev3.Route{Match: randomRouteMatch(rng), Action: routeTo(fmt.Sprintf("c%d", i))})
		}
		rc.VirtualHosts = []*routev3.VirtualHost{vh}
		tab, err := Compile(rc)
		if err != nil {
			t.Fatalf("table %d: %v", table, err)
		}
		v := tab.virtualHost(&Request{Host: "any"})
		if v.routeIndex != nil {
			indexed++
		}
		for range 300 {
			req := randomRequest(rng)
			got := tab.MatchRequest(&req)
			want := referenceMatch(v, &req)
			if got != want {
				t.Fatalf("table %d, %s %q (x-h %v, random %d): index chose %s, the plain scan %s\nroutes:\n%s",
					table, req.Method, req.Path, req.Headers, req.Random, routeLabel(got), routeLabel(want), describeRoutes(vh.Routes))
			}
			if got != nil {
				matched++
				if _, ok := got.match.segmentKey(); ok {
					keyedWins++
				}
			}
		}
	}
	t.Logf("%d indexed tables, %d matches, %d by keyed routes", indexed, matched, keyedWins)
	// The comparison must not be vacuous: most tables use the index, and
	// many requests are answered by a keyed route.
	if indexed < 200 || matched < 20000 || keyedWins < 5000 {
		t.Fatalf("weak coverage: %d indexed tables, %d matches, %d by keyed routes", indexed, matched, keyedWins)
	}
}

// referenceMatch is Envoy's rule done plainly: the first route whose match
// accepts req, every route tried in order, without the index, the header
// memo (off outside MatchRequest) or the required-header test.
func referenceMatch(vh *VirtualHost, req *Request) *Route {
	path := pathOnly(req.Path)
	for _, r := range vh.Routes {
		m := r.match
		m.required, m.requiredName = 0, ""
		if m.matchesPath(req, path) {
			return r
		}
	}
	return nil
}

// TestRouteIndexKeys checks which routes the index keys, and by what.
func TestRouteIndexKeys(t *testing.T) {
	table := mustCompile(t, `
name: keys
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - {match: {prefix: /api/v1/}, route: {cluster: a}}
  - {match: {prefix: /api}, route: {cluster: b}}
  - {match: {path: /healthz}, route: {cluster: c}}
  - {match: {path_separated_prefix: /static}, route: {cluster: d}}
  - {match: {safe_regex: {regex: "/users/[0-9]+"}}, route: {cluster: e}}
  - {match: {safe_regex: {regex: "/(a|b)/x"}}, route: {cluster: f}}
  - {match: {prefix: /API/, case_sensitive: false}, route: {cluster: g}}
  - {match: {prefix: /}, route: {cluster: h}}
`)
	want := map[string]string{"a": "/api", "c": "/healthz", "d": "/static", "e": "/users"}
	for _, r := range table.virtualHost(&Request{Host: "x"}).Routes {
		key, ok := r.match.segmentKey()
		if w, keyed := want[r.Cluster]; keyed != ok || key != w {
			t.Errorf("route to %s: key %q, %v; want %q, %v", r.Cluster, key, ok, w, keyed)
		}
	}
	for path, cluster := range map[string]string{
		"/api/v1/x": "a", "/api/v2": "b", "/apiary": "b", "/healthz": "c", "/healthz/x": "h",
		"/static": "d", "/static/x.js": "d", "/statics": "h", "/users/12": "e", "/users/x": "h",
		"/a/x": "f", "/Api/x": "g", "/": "h",
	} {
		if r := table.Match("x", path); r == nil || r.Cluster != cluster {
			t.Errorf("%s: route %s, want %s", path, routeLabel(r), cluster)
		}
	}
	single := mustCompile(t, `
name: single
virtual_hosts:
- name: vh
  domains: ["*"]
  routes: [{match: {prefix: /}, route: {cluster: a}}]
`)
	if single.virtualHost(&Request{Host: "x"}).routeIndex != nil {
		t.Error("a table without keyed routes has an index")
	}
}

// TestMatchRequestHeaderMemo: the header look-ups MatchRequest keeps for
// its next route last only as long as the match, since filters edit
// headers between matches.
func TestMatchRequestHeaderMemo(t *testing.T) {
	table := mustCompile(t, `
name: memo
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - {match: {prefix: /, headers: [{name: x-canary, string_match: {exact: a}}]}, route: {cluster: a}}
  - {match: {prefix: /, headers: [{name: x-canary, string_match: {exact: b}}]}, route: {cluster: b}}
  - {match: {prefix: /api/, headers: [{name: x-other, present_match: true}]}, route: {cluster: other}}
  - {match: {prefix: /}, route: {cluster: rest}}
`)
	h := staticHeaders{"x-canary": "b"}
	req := Request{Host: "x", Path: "/api/x", Method: "GET", Headers: h}
	for _, step := range []struct{ canary, other, want string }{
		{"b", "", "b"}, {"a", "", "a"}, {"c", "", "rest"}, {"c", "1", "other"}, {"b", "1", "b"},
	} {
		h["x-canary"] = step.canary
		delete(h, "x-other")
		if step.other != "" {
			h["x-other"] = step.other
		}
		if r := table.MatchRequest(&req); routeLabel(r) != step.want {
			t.Errorf("x-canary %s, x-other %q: route %s, want %s", step.canary, step.other, routeLabel(r), step.want)
		}
		if req.memo.on {
			t.Fatal("the header memo outlives MatchRequest")
		}
		hm, err := CompileHeaderMatch([]*routev3.HeaderMatcher{{Name: "x-canary", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
			StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "a"}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := hm.Matches(&req); got != (step.canary == "a") {
			t.Errorf("x-canary %s: a header match after the route match says %v", step.canary, got)
		}
	}
}

// randomSegments are the words random paths are made of: prefixes of one
// another and case variants, so that near misses are common.
var randomSegments = []string{"", "a", "ab", "abc", "A", "b", "api", "x"}

// randomPath is a path of up to three segments, sometimes with a trailing
// '/', rarely without a leading one.
func randomPath(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(4) {
		b.WriteByte('/')
		b.WriteString(randomSegments[rng.IntN(len(randomSegments))])
	}
	if rng.IntN(4) == 0 {
		b.WriteByte('/')
	}
	s := b.String()
	if s != "" && rng.IntN(20) == 0 {
		s = s[1:]
	}
	return s
}

// randomRegexes are anchored by compileRegex: some have a literal prefix
// with a segment, some a short one, some none or a case-folded one.
var randomRegexes = []string{
	"/a/.*", "/ab/[a-z]+", "/a/b?", "/(a|ab)/x", "(?i)/api/.*", "/api.*", ".*", "/x/[^/]*/", "/ab?/c",
	"/a/b|/x/a", "/", "/A/(x|abc)", "/abc",
}

func randomRouteMatch(rng *rand.Rand) *routev3.RouteMatch {
	m := &routev3.RouteMatch{}
	switch rng.IntN(10) {
	case 0, 1, 2:
		m.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: randomPath(rng)}
	case 3, 4:
		m.PathSpecifier = &routev3.RouteMatch_Path{Path: randomPath(rng)}
	case 5, 6:
		p := strings.TrimRight(randomPath(rng), "/")
		if p == "" {
			p = "/a"
		}
		m.PathSpecifier = &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: p}
	case 7, 8:
		m.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: randomRegexes[rng.IntN(len(randomRegexes))]}}
	default:
		if rng.IntN(2) == 0 {
			m.PathSpecifier = &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}
		} else {
			m.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
		}
	}
	if rng.IntN(5) == 0 {
		m.CaseSensitive = wrapperspb.Bool(false)
	}
	for range rng.IntN(3) {
		// Two names, in any order, so that the look-up memo of
		// MatchRequest changes hands; every form a missing header
		// fails or passes.
		hm := &routev3.HeaderMatcher{
			Name:                      []string{"x-h", "x-g"}[rng.IntN(2)],
			InvertMatch:               rng.IntN(4) == 0,
			TreatMissingHeaderAsEmpty: rng.IntN(4) == 0,
		}
		switch rng.IntN(3) {
		case 0:
			hm.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: rng.IntN(2) == 0}
		default:
			hm.HeaderMatchSpecifier = &routev3.HeaderMatcher_StringMatch{
				StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: []string{"1", ""}[rng.IntN(2)]}},
			}
		}
		m.Headers = append(m.Headers, hm)
	}
	if rng.IntN(10) == 0 {
		m.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 50}}
	}
	return m
}

func randomRequest(rng *rand.Rand) Request {
	req := Request{Host: "any", Path: randomPath(rng), Method: "GET", Random: rng.Uint64N(200)}
	switch rng.IntN(8) {
	case 0:
		req.Path += "?q=/a/b"
	case 1:
		req.Path += "#/x"
	}
	if rng.IntN(20) == 0 {
		req.Method = "CONNECT"
		if rng.IntN(2) == 0 {
			req.Path = ""
		}
	}
	h := staticHeaders{}
	for _, name := range []string{"x-h", "x-g"} {
		if rng.IntN(2) == 0 {
			h[name] = []string{"1", "2", ""}[rng.IntN(3)]
		}
	}
	req.Headers = h
	return req
}

func routeLabel(r *Route) string {
	if r == nil {
		return "none"
	}
	return r.Cluster
}

func describeRoutes(routes []*routev3.Route) string {
	var b strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&b, "  %v -> %s\n", r.GetMatch(), r.GetRoute().GetCluster())
	}
	return b.String()
}
