package httpconn

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestHealthCheckFilter(t *testing.T) {
	healthz := []*routev3.HeaderMatcher{{
		Name: ":path",
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "/healthz"},
		}},
	}}
	tests := map[string]struct {
		passThrough bool
		failing     bool
		path        string
		status      int
		body        string
	}{
		"health check passes":              {path: "/healthz", status: 200},
		"health check fails":               {path: "/healthz", failing: true, status: 503},
		"other paths go to the router":     {path: "/other", status: 200, body: "routed"},
		"other paths while failing":        {path: "/other", failing: true, status: 200, body: "routed"},
		"pass-through goes to the router":  {passThrough: true, path: "/healthz", status: 200, body: "routed"},
		"pass-through still fails locally": {passThrough: true, failing: true, path: "/healthz", status: 503},
		"query string is part of the path": {path: "/healthz?x=1", status: 200, body: "routed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			health := &fakeHealth{}
			health.failed.Store(tc.failing)
			cfg := hcm(routeConfig(&routev3.Route{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: directRoute("/", 200, "routed").Action,
			}), filter("envoy.filters.http.health_check", &healthcheckv3.HealthCheck{
				PassThroughMode: wrapperspb.Bool(tc.passThrough),
				Headers:         healthz,
			}))
			p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Health: health})
			status, hdr, body := do(t, client(), "GET", p.url(tc.path), nil, nil)
			if status != tc.status || body != tc.body {
				t.Fatalf("got %d %q, want %d %q", status, body, tc.status, tc.body)
			}
			if tc.body == "" && hdr.Get("content-length") != "0" {
				t.Errorf("content-length = %q for an empty health-check answer", hdr.Get("content-length"))
			}
		})
	}
}

// TestHealthCheckFlips checks that the answer follows the server's state
// from request to request, on one connection.
func TestHealthCheckFlips(t *testing.T) {
	health := &fakeHealth{}
	cfg := hcm(routeConfig(directRoute("/", 200, "")), filter("proxy.filters.http.health_check", &healthcheckv3.HealthCheck{
		PassThroughMode: wrapperspb.Bool(false),
	}))
	p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Health: health})
	c := dialRaw(t, p.addr)
	for i, failing := range []bool{false, true, false} {
		health.failed.Store(failing)
		c.send("GET /anything HTTP/1.1\r\nHost: h\r\n\r\n")
		resp, _ := c.response("GET")
		want := 200
		if failing {
			want = 503
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d (failing=%v): status %d, want %d", i, failing, resp.StatusCode, want)
		}
	}
}
