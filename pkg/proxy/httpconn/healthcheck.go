package httpconn

import (
	"errors"

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
	// match is the filter's headers, matched by the router's header
	// matching so that health checks match exactly as routes do (":path"
	// included).
	match router.HeaderMatch
}

// newHealthCheck compiles the filter's configuration. Errors name the
// field path below typed_config.
func newHealthCheck(cfg *healthcheckv3.HealthCheck) (*healthCheck, error) {
	if cfg.GetPassThroughMode() == nil {
		return nil, errors.New("pass_through_mode: must be set")
	}
	match, err := router.CompileHeaderMatch(cfg.GetHeaders())
	if err != nil {
		return nil, err
	}
	return &healthCheck{passThrough: cfg.GetPassThroughMode().GetValue(), match: match}, nil
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

// decide runs the filter on a request. The server's state (/healthcheck/fail
// or a drain in progress) is read only for health-check requests; a nil
// health never fails.
func (hc *healthCheck) decide(req *router.Request, health HealthState) healthCheckResult {
	if !hc.match.Matches(req) {
		return hcContinue
	}
	switch {
	case health != nil && health.HealthChecksFailed():
		return hcFailed
	case hc.passThrough:
		return hcContinue
	default:
		return hcOK
	}
}
