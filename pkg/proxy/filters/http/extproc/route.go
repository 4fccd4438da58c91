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
	// failureModeAllow is overrides.failure_mode_allow, nil when unset.
	failureModeAllow *bool
	// emitClientSpan is overrides.emit_client_span, nil when unset.
	emitClientSpan *bool
	// forward and receive are overrides.metadata_options' namespaces,
	// nil when their lists are unset.
	forward, receive *namespaces
	// initialMetadata is overrides.grpc_initial_metadata.
	initialMetadata []*corev3.HeaderValue
	// modifier is overrides.processing_request_modifier, nil when unset.
	modifier *attributeMapping
	// reqAttrs and respAttrs are overrides.request_attributes and
	// response_attributes, nil when their lists are empty.
	reqAttrs, respAttrs []attribute
}

// settings are what a request's filter uses of the configuration once
// its route's ExtProcPerRoute are merged in.
type settings struct {
	mode             mode
	svc              *service
	failureModeAllow bool
	emitClientSpan   bool
	ns               metadataNamespaces
	// initialMetadata is added to the stream's initial metadata, each
	// entry replacing the grpc_service's of the same key.
	initialMetadata []*corev3.HeaderValue
	// modifier is the processing_request_modifier, nil for none.
	modifier *attributeMapping
	// reqAttrs and respAttrs are the request_attributes and
	// response_attributes (the filter's, or the route's).
	reqAttrs, respAttrs []attribute
}

// compileRoute compiles an ExtProcPerRoute; errors name the field below
// it. A grpc_service override is checked now and opened on first use.
func compileRoute(p *extprocv3.ExtProcPerRoute, ctx httpfilter.Context) (*routeConfig, error) {
	rc := &routeConfig{disabled: p.GetDisabled()}
	o := p.GetOverrides()
	if o == nil {
		return rc, nil
	}
	if err := refuseUnsupportedOverrides(o); err != nil {
		return nil, err
	}
	var err error
	if rc.reqAttrs, err = compileAttributes(o.GetRequestAttributes(), "overrides.request_attributes"); err != nil {
		return nil, err
	}
	if rc.respAttrs, err = compileAttributes(o.GetResponseAttributes(), "overrides.response_attributes"); err != nil {
		return nil, err
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
	if v := o.GetFailureModeAllow(); v != nil {
		b := v.GetValue()
		rc.failureModeAllow = &b
	}
	if v := o.GetEmitClientSpan(); v != nil {
		b := v.GetValue()
		rc.emitClientSpan = &b
	}
	if mo := o.GetMetadataOptions(); mo != nil {
		if err := checkMetadataOptions(mo); err != nil {
			return nil, fmt.Errorf("overrides.%w", err)
		}
		if mo.GetClusterMetadataForwardingNamespaces() != nil {
			// Envoy's per-route configuration does not read it.
			return nil, errors.New("overrides.metadata_options.cluster_metadata_forwarding_namespaces: not supported by Outrigger per route (the filter's own metadata_options has it)")
		}
		if fw := mo.GetForwardingNamespaces(); fw != nil {
			rc.forward = &namespaces{untyped: fw.GetUntyped(), typed: fw.GetTyped()}
		}
		if rv := mo.GetReceivingNamespaces(); rv != nil {
			rc.receive = &namespaces{untyped: rv.GetUntyped()}
		}
	}
	for i, h := range o.GetGrpcInitialMetadata() {
		if h.GetKey() == "" {
			return nil, fmt.Errorf("overrides.grpc_initial_metadata[%d].key: must not be empty", i)
		}
	}
	rc.initialMetadata = o.GetGrpcInitialMetadata()
	if pm := o.GetProcessingRequestModifier(); pm != nil {
		var err error
		if rc.modifier, err = compileRequestModifier(pm, "overrides.processing_request_modifier"); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// refuseUnsupportedOverrides refuses the ExtProcOverrides fields
// Outrigger does not implement with their paths: async_mode, deprecated
// and without behaviour in Envoy (the filter has no asynchronous mode of
// that name left; observability_mode replaced it).
func refuseUnsupportedOverrides(o *extprocv3.ExtProcOverrides) error {
	//lint:ignore SA1019 a deprecated field is still refused by its path when set
	if o.GetAsyncMode() {
		return errors.New("overrides.async_mode: not supported by Outrigger: deprecated and not implemented in Envoy (observability_mode is the filter's asynchronous mode)")
	}
	return nil
}

// routeSettings merges the route's ExtProcPerRoute configurations from
// the least specific level to the most specific, as Envoy merges them:
// the most specific says whether the filter is disabled; a processing
// mode, a grpc_service, failure_mode_allow and each list of metadata
// namespaces, a processing_request_modifier and each list of attributes come from the most
// specific level that has one (a disabled level has no mode); grpc_initial_metadata entries add up, a more
// specific one replacing the entries of its key.
func (f *filter) routeSettings(s httpfilter.Stream) (settings, error) {
	c := f.c
	set := settings{mode: c.mode, svc: c.svc, failureModeAllow: c.failureModeAllow, emitClientSpan: c.emitClientSpan, ns: c.ns, modifier: c.modifier,
		reqAttrs: c.requestAttributes, respAttrs: c.responseAttributes}
	f.routeConfigs = s.RouteConfigs(c.name, f.routeConfigs[:0])
	defer clear(f.routeConfigs)
	if len(f.routeConfigs) == 0 {
		c.observableBodies(&set.mode)
		return set, nil
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
		if rc.failureModeAllow != nil {
			merged.failureModeAllow = rc.failureModeAllow
		}
		if rc.emitClientSpan != nil {
			merged.emitClientSpan = rc.emitClientSpan
		}
		if rc.forward != nil {
			merged.forward = rc.forward
		}
		if rc.receive != nil {
			merged.receive = rc.receive
		}
		if rc.modifier != nil {
			merged.modifier = rc.modifier
		}
		if rc.reqAttrs != nil {
			merged.reqAttrs = rc.reqAttrs
		}
		if rc.respAttrs != nil {
			merged.respAttrs = rc.respAttrs
		}
		merged.initialMetadata = mergeInitialMetadata(merged.initialMetadata, rc.initialMetadata)
	}
	if merged.disabled {
		set.mode = disabledMode
		return set, nil
	}
	if merged.mode != nil {
		set.mode = *merged.mode
	}
	c.observableBodies(&set.mode)
	if merged.failureModeAllow != nil {
		set.failureModeAllow = *merged.failureModeAllow
	}
	if merged.emitClientSpan != nil {
		set.emitClientSpan = *merged.emitClientSpan
	}
	if merged.forward != nil {
		set.ns.forward = *merged.forward
	}
	if merged.receive != nil {
		set.ns.receive = *merged.receive
	}
	set.initialMetadata = merged.initialMetadata
	if merged.modifier != nil {
		set.modifier = merged.modifier
	}
	if merged.reqAttrs != nil {
		set.reqAttrs = merged.reqAttrs
	}
	if merged.respAttrs != nil {
		set.respAttrs = merged.respAttrs
	}
	if merged.grpc != nil && c.http == nil {
		// With an http_service, Envoy keeps posting to it: a route's
		// grpc_service (and grpc_initial_metadata) is not used.
		svc, err := c.serviceFor(merged.grpc, merged.grpcKey)
		if err != nil {
			return set, err
		}
		set.svc = svc
	}
	return set, nil
}

// mergeInitialMetadata adds more's entries to less, as Envoy's
// mergeGrpcInitialMetadata: an entry replaces those of its key, or is
// appended. less is not modified.
func mergeInitialMetadata(less, more []*corev3.HeaderValue) []*corev3.HeaderValue {
	if len(more) == 0 {
		return less
	}
	out := append([]*corev3.HeaderValue(nil), less...)
	for _, h := range more {
		found := false
		for i, d := range out {
			if d.GetKey() == h.GetKey() {
				out[i], found = h, true
			}
		}
		if !found {
			out = append(out, h)
		}
	}
	return out
}

// observableBodies drops the body modes observability_mode does not
// send: only STREAMED bodies go to the processor there, as in Envoy.
func (c *config) observableBodies(m *mode) {
	if !c.observability {
		return
	}
	if m.requestBody != extprocv3.ProcessingMode_STREAMED {
		m.requestBody = extprocv3.ProcessingMode_NONE
	}
	if m.responseBody != extprocv3.ProcessingMode_STREAMED {
		m.responseBody = extprocv3.ProcessingMode_NONE
	}
}
