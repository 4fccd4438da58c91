package extauthz

import (
	"errors"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
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
}

// compileRoute compiles an ExtAuthzPerRoute.
func compileRoute(p *extauthzv3.ExtAuthzPerRoute) (*routeConfig, error) {
	rc := &routeConfig{disabled: p.GetDisabled()}
	cs := p.GetCheckSettings()
	if cs == nil {
		return rc, nil
	}
	switch {
	case cs.GetServiceOverride() != nil:
		return nil, errors.New("check_settings.service_override: not supported by Outrigger")
	case cs.GetEmitClientSpan() != nil:
		return nil, errors.New("check_settings.emit_client_span: not supported by Outrigger (no tracing of the check)")
	case cs.GetDisableRequestBodyBuffering() && cs.GetWithRequestBody() != nil:
		// Envoy's words.
		return nil, errors.New("check_settings: invalid configuration for check_settings. Only one of disable_request_body_buffering or with_request_body can be set")
	}
	rc.contextExtensions = cs.GetContextExtensions()
	rc.disableBody = cs.GetDisableRequestBodyBuffering()
	if b := cs.GetWithRequestBody(); b != nil {
		rc.body = compileBody(b)
	}
	return rc, nil
}
