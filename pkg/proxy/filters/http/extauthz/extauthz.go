// Package extauthz is the external authorization HTTP filter
// (envoy.filters.http.ext_authz): before a request is routed, it asks an
// authorization service, the gRPC envoy.service.auth.v3.Authorization
// service or a plain HTTP service, whether the request may go on. An
// allowed request goes on with the headers the service adds; a denied one
// is answered with the service's status, headers and body; a service that
// fails or does not answer within the timeout gets status_on_error, or
// lets the request through with failure_mode_allow. Only the request
// waits: its own goroutine holds it, bounded by the timeout.
//
// Its stats are Envoy's: http.<stat_prefix>.ext_authz[.<filter
// stat_prefix>].{ok,denied,error,disabled,failure_mode_allowed}, and
// cluster.<route cluster>.ext_authz[.<filter stat_prefix>].{ok,denied,
// error,failure_mode_allowed}.
package extauthz

import (
	"errors"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.ext_authz"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := config.(*extauthzv3.ExtAuthz)
	if !ok {
		return nil, errors.New("not an ExtAuthz configuration")
	}
	return compile(p, ctx)
}

// CompileRoute implements httpfilter.RouteFactory: an ExtAuthzPerRoute.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := config.(*extauthzv3.ExtAuthzPerRoute)
	if !ok {
		return nil, errors.New("not an ExtAuthzPerRoute configuration")
	}
	return compileRoute(p, ctx)
}
