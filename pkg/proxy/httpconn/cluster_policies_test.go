package httpconn

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// policyCluster is a fakeCluster whose HTTP protocol options carry route
// policies.
type policyCluster struct {
	*fakeCluster
	policies *router.ClusterPolicies
}

func (pc policyCluster) RoutePolicies() *router.ClusterPolicies { return pc.policies }

// anyUpstreams resolves clusters of any kind.
type anyUpstreams map[string]UpstreamCluster

func (u anyUpstreams) Cluster(name string) UpstreamCluster { return u[name] }

func compilePolicies(t *testing.T, opts *httpv3.HttpProtocolOptions) *router.ClusterPolicies {
	t.Helper()
	p, err := router.CompileClusterPolicies(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// countingUpstream counts its requests and answers them 200.
func countingUpstream(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	n := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { n.Add(1) }))
	t.Cleanup(srv.Close)
	return srv, n
}

// A cluster's retry_policy replaces the route's whole: it retries where
// the route has none, and where the route retries on 5xx a cluster
// policy retrying on connect failures only keeps the 503.
func TestClusterRetryPolicyReplacesRoutes(t *testing.T) {
	up := failOnceUpstream(t)
	st := stats.NewStore()
	fc := newFakeCluster(st, "up", false, hostOf(up))
	t.Cleanup(fc.closeIdle)
	retry5xx := compilePolicies(t, &httpv3.HttpProtocolOptions{RetryPolicy: &routev3.RetryPolicy{RetryOn: "5xx"}})
	retryConnect := compilePolicies(t, &httpv3.HttpProtocolOptions{RetryPolicy: &routev3.RetryPolicy{RetryOn: "connect-failure"}})
	ups := anyUpstreams{
		"retries":    policyCluster{fc, retry5xx},
		"connect":    policyCluster{fc, retryConnect},
		"no-options": fc,
	}
	routeRetry := func(a *routev3.RouteAction) { a.RetryPolicy = &routev3.RetryPolicy{RetryOn: "5xx"} }
	rc := routeConfig(
		clusterRoute("/cluster-retries/", "retries"),
		clusterRoute("/cluster-connect/", "connect", routeRetry),
		clusterRoute("/route-retries/", "no-options", routeRetry),
	)
	rc.VirtualHosts[0].IncludeAttemptCountInResponse = true
	p := startProxy(t, hcm(rc), Deps{Stats: st, Upstreams: ups})
	for _, tc := range []struct {
		path     string
		status   int
		attempts string
	}{
		{"/cluster-retries/a", 200, "2"},
		{"/cluster-connect/a", 503, "1"},
		{"/route-retries/a", 200, "2"},
	} {
		status, hdr, _ := do(t, client(), "GET", p.url(tc.path), nil, nil)
		if status != tc.status || hdr.Get("x-envoy-attempt-count") != tc.attempts {
			t.Errorf("%s: %d after %q attempts; want %d after %s", tc.path, status, hdr.Get("x-envoy-attempt-count"), tc.status, tc.attempts)
		}
	}
}

// A cluster's hash_policy gives the balancer its hash key, instead of the
// route's.
func TestClusterHashPolicyReplacesRoutes(t *testing.T) {
	up := echoUpstream(t)
	st := stats.NewStore()
	fc := newFakeCluster(st, "up", false, hostOf(up))
	fc.hashed = true
	byHeader := func(name string) []*routev3.RouteAction_HashPolicy {
		return []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: name}}}}
	}
	ups := anyUpstreams{"up": policyCluster{fc, compilePolicies(t, &httpv3.HttpProtocolOptions{HashPolicy: byHeader("x-cluster-key")})}}
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up", func(a *routev3.RouteAction) { a.HashPolicy = byHeader("x-route-key") }))),
		Deps{Stats: st, Upstreams: ups})
	// The route's header alone gives no key: the cluster's policy reads
	// another.
	if status, _, _ := do(t, client(), "GET", p.url("/a"), nil, map[string]string{"x-route-key": "1"}); status != 200 {
		t.Fatalf("status %d", status)
	}
	if got := fc.hashes.Load(); got != 0 {
		t.Errorf("the route's hash_policy made %d keys; want none", got)
	}
	if status, _, _ := do(t, client(), "GET", p.url("/a"), nil, map[string]string{"x-cluster-key": "1"}); status != 200 {
		t.Fatalf("status %d", status)
	}
	if got := fc.hashes.Load(); got != 1 {
		t.Errorf("the cluster's hash_policy made %d keys; want 1", got)
	}
}

// A cluster's request_mirror_policies mirror the requests routed to it,
// instead of the route's.
func TestClusterMirrorPoliciesReplaceRoutes(t *testing.T) {
	up := echoUpstream(t)
	routeShadow, routeSeen := countingUpstream(t)
	clusterShadow, clusterSeen := countingUpstream(t)
	st := stats.NewStore()
	mirrors := compilePolicies(t, &httpv3.HttpProtocolOptions{RequestMirrorPolicies: []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: "cluster-shadow"}}})
	ups := anyUpstreams{
		"up":             policyCluster{newFakeCluster(st, "up", false, hostOf(up)), mirrors},
		"plain":          newFakeCluster(st, "plain", false, hostOf(up)),
		"route-shadow":   newFakeCluster(st, "route-shadow", false, hostOf(routeShadow)),
		"cluster-shadow": newFakeCluster(st, "cluster-shadow", false, hostOf(clusterShadow)),
	}
	routeMirror := func(a *routev3.RouteAction) {
		a.RequestMirrorPolicies = []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: "route-shadow"}}
	}
	p := startProxy(t, hcm(routeConfig(clusterRoute("/plain", "plain", routeMirror), clusterRoute("/", "up", routeMirror))),
		Deps{Stats: st, Upstreams: ups})
	if status, _, _ := do(t, client(), "GET", p.url("/a"), nil, nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	eventually(t, "the cluster's shadow", func() bool { return clusterSeen.Load() == 1 })
	// The route's shadow gets the request of the cluster without
	// policies; then it has seen one request, not two.
	if status, _, _ := do(t, client(), "GET", p.url("/plain"), nil, nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	eventually(t, "the route's shadow", func() bool { return routeSeen.Load() == 1 })
	if status, _, _ := do(t, client(), "GET", p.url("/b"), nil, nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	eventually(t, "the cluster's second shadow", func() bool { return clusterSeen.Load() == 2 })
	if got := routeSeen.Load(); got != 1 {
		t.Errorf("the route's shadow saw %d requests; want 1 (the cluster's policies replace the route's)", got)
	}
}
