package healthcheck

import (
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
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
