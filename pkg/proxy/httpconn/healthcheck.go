package httpconn

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// healthCheck is the health_check HTTP filter: it recognises health-check
// requests by their headers and, unless in pass-through mode, answers them
// itself: 200 while the server passes health checks, 503 after
// /healthcheck/fail or while draining. In pass-through mode it lets them
// through to the router, except while failing, when it answers 503 too.
type healthCheck struct {
	passThrough bool
	// match is a one-route table whose only route matches the filter's
	// headers: the router's header matching, reused as is, so health
	// checks match exactly as routes do (":path" included).
	match *router.Table
}

// newHealthCheck compiles the filter's configuration. Errors name the
// field path below typed_config.
func newHealthCheck(cfg *healthcheckv3.HealthCheck) (*healthCheck, error) {
	if cfg.GetPassThroughMode() == nil {
		return nil, errors.New("pass_through_mode: must be set")
	}
	rc := &routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{{
		Name:    "health_check",
		Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Match: &routev3.RouteMatch{
				PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: ""},
				Headers:       cfg.GetHeaders(),
			},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
				Status: 200,
				Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{}},
			}},
		}},
	}}}
	table, err := router.Compile(rc)
	if err != nil {
		// The only configured part of rc is the header list; the
		// router names it below the route.
		return nil, fmt.Errorf("headers: %w", err)
	}
	return &healthCheck{passThrough: cfg.GetPassThroughMode().GetValue(), match: table}, nil
}

// healthCheckResult is what the filter decided for one request.
type healthCheckResult uint8

const (
	// hcContinue: not answered here; the router takes the request.
	hcContinue healthCheckResult = iota
	// hcOK: answer 200.
	hcOK
	// hcFailed: answer 503 with the LH response flag.
	hcFailed
)

// decide runs the filter on a request; failing reports /healthcheck/fail
// or a drain in progress.
func (hc *healthCheck) decide(req *router.Request, failing bool) healthCheckResult {
	if hc.match.MatchRequest(req) == nil {
		return hcContinue
	}
	switch {
	case failing:
		return hcFailed
	case hc.passThrough:
		return hcContinue
	default:
		return hcOK
	}
}
