package extauthz

import (
	"errors"
	"fmt"
	"time"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// routeConfig is a compiled ExtAuthzPerRoute.
type routeConfig struct {
	disabled bool
	// contextExtensions are merged from the least specific level to the
	// most specific.
	contextExtensions map[string]string
	disableBody       bool
	// body overrides with_request_body when set.
	body *bodySettings
	// client, when set, is check_settings' service override, asked
	// instead of the filter's service within timeout. Only the most
	// specific configuration's override counts, as in Envoy.
	client  checker
	timeout time.Duration
	// emitClientSpan is check_settings.emit_client_span, nil when unset
	// (the filter's applies).
	emitClientSpan *bool
}

// perRouteTimeout is Envoy's timeout of a per-route service that sets
// none (kDefaultPerRouteTimeoutMs).
const perRouteTimeout = 200 * time.Millisecond

// Close implements io.Closer: the override's channel or connections.
func (rc *routeConfig) Close() error {
	if rc.client == nil {
		return nil
	}
	return rc.client.Close()
}

// compileRoute compiles an ExtAuthzPerRoute.
func compileRoute(p *extauthzv3.ExtAuthzPerRoute, ctx httpfilter.Context) (*routeConfig, error) {
	rc := &routeConfig{disabled: p.GetDisabled()}
	cs := p.GetCheckSettings()
	if cs == nil {
		return rc, nil
	}
	switch {
	case cs.GetDisableRequestBodyBuffering() && cs.GetWithRequestBody() != nil:
		// Envoy's words.
		return nil, errors.New("check_settings: invalid configuration for check_settings. Only one of disable_request_body_buffering or with_request_body can be set")
	}
	var err error
	switch o := cs.GetServiceOverride().(type) {
	case *extauthzv3.CheckSettings_GrpcService:
		if rc.client, rc.timeout, err = openGRPC(o.GrpcService, ctx.Services, perRouteTimeout); err != nil {
			return nil, fmt.Errorf("check_settings.grpc_service.%w", err)
		}
	case *extauthzv3.CheckSettings_HttpService:
		//lint:ignore SA1019 the deprecated field is refused, not read.
		if o.HttpService.GetAuthorizationRequest().GetAllowedHeaders() != nil {
			// Envoy builds the check request with the filter's header
			// lists and ignores the override's.
			return nil, errors.New("check_settings.http_service.authorization_request.allowed_headers: not supported in a per-route override (Envoy ignores it; use the filter's allowed_headers)")
		}
		if rc.client, rc.timeout, err = newHTTPClient(o.HttpService, ctx.Services, perRouteTimeout); err != nil {
			return nil, fmt.Errorf("check_settings.http_service.%w", err)
		}
	}
	if e := cs.GetEmitClientSpan(); e != nil {
		v := e.GetValue()
		rc.emitClientSpan = &v
	}
	rc.contextExtensions = cs.GetContextExtensions()
	rc.disableBody = cs.GetDisableRequestBodyBuffering()
	if b := cs.GetWithRequestBody(); b != nil {
		rc.body = compileBody(b)
	}
	return rc, nil
}
