// Package healthcheck is the health_check HTTP filter
// (envoy.filters.http.health_check): it recognises health-check requests
// by their headers and, unless in pass-through mode, answers them itself:
// 200 while the server passes health checks, 503 after /healthcheck/fail
// or while draining. In pass-through mode it lets them through to the
// router, except while failing, when it answers 503 too.
package healthcheck

import (
	"errors"

	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.health_check"

// Factory builds the filter.
type Factory struct{}

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, ok := config.(*healthcheckv3.HealthCheck)
	if !ok {
		return nil, errors.New("not a HealthCheck configuration")
	}
	if cfg.GetPassThroughMode() == nil {
		return nil, errors.New("pass_through_mode: must be set")
	}
	match, err := router.CompileHeaderMatch(cfg.GetHeaders())
	if err != nil {
		return nil, err
	}
	return &filter{passThrough: cfg.GetPassThroughMode().GetValue(), match: match, health: ctx.Health}, nil
}

// filter is both the compiled configuration and the filter of every
// request: it keeps no state per request.
type filter struct {
	passThrough bool
	// match is the filter's headers, matched by the router's header
	// matching so that health checks match exactly as routes do (":path"
	// included).
	match  router.HeaderMatch
	health httpfilter.HealthState
}

// NewFilter implements httpfilter.Config.
func (f *filter) NewFilter() httpfilter.Filter { return f }

// DecodeHeaders implements httpfilter.Decoder. The server's state is read
// only for health-check requests; a nil health never fails.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.match.Matches(s.Request()) {
		return httpfilter.Continue
	}
	s.MarkHealthCheck()
	switch {
	case f.health != nil && f.health.HealthChecksFailed():
		s.SendLocalReply(503, "", accesslog.FailedLocalHealthCheck, "health_check_failed")
		return httpfilter.Stop
	case f.passThrough:
		return httpfilter.Continue
	default:
		s.SendLocalReply(200, "", 0, "health_check_ok")
		return httpfilter.Stop
	}
}
