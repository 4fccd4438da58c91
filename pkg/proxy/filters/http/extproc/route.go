package extproc

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// routeConfig is a compiled ExtProcPerRoute.
type routeConfig struct {
	disabled bool
	// mode is overrides.processing_mode, nil when unset.
	mode *mode
	// grpc is overrides.grpc_service, nil when unset, with its key.
	grpc    *corev3.GrpcService
	grpcKey string
}

// compileRoute compiles an ExtProcPerRoute; errors name the field below
// it. A grpc_service override is checked now and opened on first use.
func compileRoute(p *extprocv3.ExtProcPerRoute, ctx httpfilter.Context) (*routeConfig, error) {
	rc := &routeConfig{disabled: p.GetDisabled()}
	o := p.GetOverrides()
	if o == nil {
		return rc, nil
	}
	//lint:ignore SA1019 a deprecated field is still refused by its path when set
	async := o.GetAsyncMode()
	switch {
	case async:
		return nil, errors.New("overrides.async_mode: not supported by Outrigger")
	case len(o.GetRequestAttributes()) > 0:
		return nil, errors.New("overrides.request_attributes: not supported by Outrigger (the filter's request_attributes are)")
	case len(o.GetResponseAttributes()) > 0:
		return nil, errors.New("overrides.response_attributes: not supported by Outrigger (the filter's response_attributes are)")
	case o.GetMetadataOptions() != nil:
		return nil, errors.New("overrides.metadata_options: not supported by Outrigger")
	case len(o.GetGrpcInitialMetadata()) > 0:
		return nil, errors.New("overrides.grpc_initial_metadata: not supported by Outrigger")
	case o.GetFailureModeAllow() != nil:
		return nil, errors.New("overrides.failure_mode_allow: not supported by Outrigger")
	case o.GetProcessingRequestModifier() != nil:
		return nil, errors.New("overrides.processing_request_modifier: not supported by Outrigger")
	case o.GetEmitClientSpan() != nil:
		return nil, errors.New("overrides.emit_client_span: not supported by Outrigger (no tracing of the processor's stream)")
	}
	if pm := o.GetProcessingMode(); pm != nil {
		m, err := compileMode(pm)
		if err != nil {
			return nil, fmt.Errorf("overrides.processing_mode.%w", err)
		}
		rc.mode = &m
	}
	if gs := o.GetGrpcService(); gs != nil {
		if ctx.Services == nil {
			return nil, errors.New("overrides.grpc_service: no gRPC service can be reached")
		}
		// Checked by opening it (channels connect lazily), then closed:
		// the filter opens it again, once, on first use.
		ch, err := ctx.Services.OpenGRPC(gs)
		if err != nil {
			return nil, fmt.Errorf("overrides.grpc_service.%w", err)
		}
		_ = ch.Close()
		rc.grpc, rc.grpcKey = gs, serviceKey(gs)
	}
	return rc, nil
}

// routeSettings merges the route's ExtProcPerRoute configurations from
// the least specific level to the most specific, as Envoy merges them:
// the most specific says whether the filter is disabled; a processing
// mode and a grpc_service override come from the most specific level
// that has one (a disabled level has no mode).
func (f *filter) routeSettings(s httpfilter.Stream) (m mode, svc *service, err error) {
	c := f.c
	m, svc = c.mode, c.svc
	f.routeConfigs = s.RouteConfigs(c.name, f.routeConfigs[:0])
	defer clear(f.routeConfigs)
	if len(f.routeConfigs) == 0 {
		return m, svc, nil
	}
	var merged routeConfig
	for _, v := range f.routeConfigs {
		rc, _ := v.(*routeConfig)
		if rc == nil {
			continue
		}
		merged.disabled = rc.disabled
		switch {
		case rc.disabled:
			merged.mode = nil
		case rc.mode != nil:
			merged.mode = rc.mode
		}
		if rc.grpc != nil {
			merged.grpc, merged.grpcKey = rc.grpc, rc.grpcKey
		}
	}
	if merged.disabled {
		return disabledMode, svc, nil
	}
	if merged.mode != nil {
		m = *merged.mode
	}
	if merged.grpc != nil {
		if svc, err = c.serviceFor(merged.grpc, merged.grpcKey); err != nil {
			return m, nil, err
		}
	}
	return m, svc, nil
}
