package healthcheck

import (
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// health is a server health state.
type health bool

func (h health) HealthChecksFailed() bool { return bool(h) }

func TestDecodeHeaders(t *testing.T) {
	healthz := []*routev3.HeaderMatcher{{
		Name: ":path",
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "/healthz"},
		}},
	}}
	tests := map[string]struct {
		passThrough, failing bool
		path                 string
		want                 httpfilter.Status
		status               int
		details              string
	}{
		"a health check passes":              {path: "/healthz", want: httpfilter.Stop, status: 200, details: "health_check_ok"},
		"a health check fails":               {path: "/healthz", failing: true, want: httpfilter.Stop, status: 503, details: "health_check_failed"},
		"other paths continue":               {path: "/other", want: httpfilter.Continue},
		"other paths continue while failing": {path: "/other", failing: true, want: httpfilter.Continue},
		"pass-through continues":             {passThrough: true, path: "/healthz", want: httpfilter.Continue},
		"pass-through still fails":           {passThrough: true, failing: true, path: "/healthz", want: httpfilter.Stop, status: 503, details: "health_check_failed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := Factory{}.Compile(&healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(tc.passThrough), Headers: healthz},
				httpfilter.Context{Health: health(tc.failing)})
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream("GET", tc.path)
			got := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
			var status int
			var details string
			if s.Reply != nil {
				status, details = s.Reply.Status, s.Reply.Details
			}
			if got != tc.want || status != tc.status || details != tc.details {
				t.Errorf("got %v, reply %d %q; want %v, reply %d %q", got, status, details, tc.want, tc.status, tc.details)
			}
			if hc := tc.path == "/healthz"; s.HealthCheck != hc {
				t.Errorf("marked as a health check: %v, want %v", s.HealthCheck, hc)
			}
			if tc.status == 503 && s.Flags != accesslog.FailedLocalHealthCheck {
				t.Errorf("flags %v, want LH", s.Flags)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		cfg  proto.Message
		want string
	}{
		"pass_through_mode unset": {cfg: &healthcheckv3.HealthCheck{}, want: "pass_through_mode: must be set"},
		"a bad header matcher": {cfg: &healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(false), Headers: []*routev3.HeaderMatcher{{
			Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "("}},
			}},
		}}}, want: "headers[0]"},
		"another filter's configuration": {cfg: &routerv3.Router{}, want: "not a HealthCheck configuration"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.cfg, httpfilter.Context{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// members is a Membership of fixed counts: total, healthy, degraded.
type members map[string][3]int64

func (m members) ClusterMembership(name string) (total, healthy, degraded int64, ok bool) {
	c, ok := m[name]
	return c[0], c[1], c[2], ok
}

// servicesWith is an httpfilter.Services that is also a Membership.
type servicesWith struct {
	httpfilter.Services
	members
}

func TestClusterMinHealthyPercentages(t *testing.T) {
	healthz := []*routev3.HeaderMatcher{{Name: ":path", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "/healthz"}}}}}
	for name, tc := range map[string]struct {
		members members
		mins    map[string]float64
		status  int
		details string
	}{
		"all above":          {members{"a": {4, 3, 1}, "b": {10, 5, 0}}, map[string]float64{"a": 100, "b": 50}, 200, "health_check_ok_cluster_healthy"},
		"one below":          {members{"a": {4, 3, 0}, "b": {10, 5, 0}}, map[string]float64{"a": 80, "b": 50}, 503, "health_check_failed_cluster_unhealthy"},
		"missing cluster":    {members{"a": {4, 4, 0}}, map[string]float64{"a": 10, "nope": 10}, 503, "health_check_failed_no_cluster_found"},
		"empty, minimum 0":   {members{"a": {0, 0, 0}}, map[string]float64{"a": 0}, 200, "health_check_ok_cluster_healthy"},
		"empty, minimum > 0": {members{"a": {0, 0, 0}}, map[string]float64{"a": 1}, 503, "health_check_failed_cluster_empty"},
	} {
		t.Run(name, func(t *testing.T) {
			mins := map[string]*typev3.Percent{}
			for c, v := range tc.mins {
				mins[c] = &typev3.Percent{Value: v}
			}
			cfg, err := Factory{}.Compile(&healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(false), Headers: healthz, ClusterMinHealthyPercentages: mins},
				httpfilter.Context{Services: servicesWith{members: tc.members}})
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream("GET", "/healthz")
			cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
			if s.Reply == nil || s.Reply.Status != tc.status || s.Reply.Details != tc.details {
				t.Fatalf("reply %+v, want %d %q", s.Reply, tc.status, tc.details)
			}
			if failed := s.Reply.Flags&accesslog.FailedLocalHealthCheck != 0; failed != (tc.status != 200) {
				t.Errorf("FailedLocalHealthCheck %v for %d", failed, tc.status)
			}
		})
	}
	_, err := Factory{}.Compile(&healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(false), Headers: healthz,
		ClusterMinHealthyPercentages: map[string]*typev3.Percent{"a": {Value: 10}}}, httpfilter.Context{})
	if err == nil || !strings.Contains(err.Error(), "cluster_min_healthy_percentages") {
		t.Errorf("without clusters: %v", err)
	}
}

// TestCacheTime: in pass-through mode the first health check of each
// cache_time period goes upstream; the others of the period get its
// status (and x-envoy-degraded) from the filter.
func TestCacheTime(t *testing.T) {
	healthz := []*routev3.HeaderMatcher{{Name: ":path", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "/healthz"}}}}}
	now := time.Unix(1000, 0)
	cfg, err := Factory{}.Compile(&healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(true), Headers: healthz, CacheTime: durationpb.New(10 * time.Second)},
		httpfilter.Context{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	check := func() *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/healthz")
		f := cfg.NewFilter()
		if f.(httpfilter.Decoder).DecodeHeaders(s) == httpfilter.Continue {
			// Passed through: the upstream answers 503, degraded.
			s.Status = 503
			s.ResponseHeaders().Set("x-envoy-degraded", "")
		} else {
			s.Status = s.Reply.Status
		}
		f.(httpfilter.Encoder).EncodeHeaders(s)
		return s
	}
	if s := check(); s.Reply != nil {
		t.Fatalf("the first check was answered locally: %+v", s.Reply)
	}
	now = now.Add(3 * time.Second)
	s := check()
	if s.Reply == nil || s.Reply.Status != 503 || s.Reply.Details != "health_check_cached" || s.Reply.Flags&accesslog.FailedLocalHealthCheck == 0 {
		t.Fatalf("the second check: %+v", s.Reply)
	}
	if _, ok := s.ResponseHeaders().Get("x-envoy-degraded"); !ok {
		t.Error("the cached answer is not marked degraded")
	}
	if other := httpfiltertest.NewStream("GET", "/other"); cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(other) != httpfilter.Continue {
		t.Error("a request that is not a health check was held")
	}
	now = now.Add(8 * time.Second) // the next period
	if s := check(); s.Reply != nil {
		t.Fatalf("the first check of the next period was answered locally: %+v", s.Reply)
	}
}
