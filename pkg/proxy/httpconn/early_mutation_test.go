package httpconn

import (
	"strings"
	"testing"

	mutationv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func earlyMutation(t *testing.T, ms ...*mutationv3.HeaderMutation) *corev3.TypedExtensionConfig {
	t.Helper()
	a, err := anypb.New(&hmv3.HeaderMutation{Mutations: ms})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TypedExtensionConfig{Name: "envoy.http.early_header_mutation.header_mutation", TypedConfig: a}
}

// The early header mutations edit the request before it is routed: a
// route matches the header one adds, and the headers they remove never go
// upstream; the extensions run in order.
func TestEarlyHeaderMutations(t *testing.T) {
	up := echoUpstream(t)
	st := stats.NewStore()
	rc := routeConfig(clusterRoute("/", "up"))
	rc.VirtualHosts[0].Routes = []*routev3.Route{{
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}, Headers: []*routev3.HeaderMatcher{{
			Name: "x-tier", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "gold"}}},
		}}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "up"}}},
	}}
	cfg := hcm(rc)
	cfg.EarlyHeaderMutationExtensions = []*corev3.TypedExtensionConfig{
		earlyMutation(t,
			&mutationv3.HeaderMutation{Action: &mutationv3.HeaderMutation_Remove{Remove: "x-secret"}},
			&mutationv3.HeaderMutation{Action: &mutationv3.HeaderMutation_RemoveOnMatch_{RemoveOnMatch: &mutationv3.HeaderMutation_RemoveOnMatch{
				KeyMatcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "x-internal-"}},
			}}},
		),
		earlyMutation(t, &mutationv3.HeaderMutation{Action: &mutationv3.HeaderMutation_Append{Append: &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: "x-tier", Value: "gold"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}}),
	}
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": newFakeCluster(st, "up", false, hostOf(up))}, Extensions: builtin.Registry()})
	status, _, body := do(t, client(), "GET", p.url("/a"), nil, map[string]string{
		"x-tier": "bronze", "x-secret": "s", "x-internal-a": "1", "x-internal-b": "2", "x-kept": "k",
	})
	if status != 200 {
		t.Fatalf("status %d; want 200 (the route matches the header the mutation set)", status)
	}
	for _, gone := range []string{"x-secret", "x-internal-a", "x-internal-b", "bronze"} {
		if strings.Contains(body, gone) {
			t.Errorf("%s reached the upstream:\n%s", gone, body)
		}
	}
	for _, kept := range []string{"x-kept: k", "x-tier: gold"} {
		if !strings.Contains(body, kept) {
			t.Errorf("the upstream did not get %q:\n%s", kept, body)
		}
	}
}

// An extension of another category, or a bad mutation, is refused with
// its path.
func TestEarlyHeaderMutationsRefused(t *testing.T) {
	cfg := hcm(routeConfig(clusterRoute("/", "up")))
	cfg.EarlyHeaderMutationExtensions = []*corev3.TypedExtensionConfig{
		earlyMutation(t, &mutationv3.HeaderMutation{Action: &mutationv3.HeaderMutation_Append{Append: &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: ":path", Value: "/x"}}}}),
	}
	_, err := New(cfg, Deps{Stats: stats.NewStore(), Extensions: builtin.Registry()})
	if err == nil || !strings.Contains(err.Error(), "early_header_mutation_extensions[0].typed_config.mutations[0].append") {
		t.Errorf("got %v; want an error naming early_header_mutation_extensions[0].typed_config.mutations[0].append", err)
	}
}
