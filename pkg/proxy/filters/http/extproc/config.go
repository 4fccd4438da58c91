package extproc

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/mutationrules"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// defaultMessageTimeout is Envoy's message_timeout when none is set.
const defaultMessageTimeout = 200 * time.Millisecond

// bodyLimit bounds a buffered body, as Envoy's default buffer limit (the
// listener's per_connection_buffer_limit_bytes, 1 MiB) does: a BUFFERED
// request body over it is answered 413.
const bodyLimit = 1 << 20

// config is a compiled ExternalProcessor.
type config struct {
	// name is the name the filter is configured with, the key of its
	// per-route configuration.
	name string
	// upstream: the filter runs in an upstream chain, per attempt.
	upstream bool
	// svc is the grpc_service's channel; services holds the channels of
	// the per-route grpc_service overrides, opened on first use.
	svc *service
	// http is the http_service, nil with a grpc_service (svc is nil
	// with an http_service).
	http     *httpService
	open     func(gs *corev3.GrpcService) (*service, error)
	mu       sync.Mutex
	services map[string]*service

	failureModeAllow bool
	// emitClientSpan is emit_client_span (default true): a traced
	// request's stream has a span of its own, else it carries the
	// request span's context.
	emitClientSpan    bool
	mode              mode
	messageTimeout    time.Duration
	maxMessageTimeout time.Duration
	rules             *mutationrules.Rules
	// allowed and disallowed are forward_rules (nil: no filtering).
	allowed, disallowed router.ListStringMatch
	allowModeOverride   bool
	// sendBodyEarly is send_body_without_waiting_for_header_response:
	// a STREAMED request body goes to the processor while the answer to
	// the request headers is awaited (see early.go).
	sendBodyEarly bool
	// allowCL is allow_content_length_header (see length.go).
	allowCL          bool
	disableImmediate bool
	routeCache       extprocv3.ExternalProcessor_RouteCacheAction
	// ns are metadata_options' namespaces; clusterNS its
	// cluster_metadata_forwarding_namespaces, read from the metadata of
	// the request's cluster, found through clusters.
	ns        metadataNamespaces
	clusterNS namespaces
	clusters  httpfilter.Services
	// statusOnError is the status of the reply to a failed exchange
	// (status_on_error, 500 by default); a timeout is answered 504.
	statusOnError int
	// allowedOverrides are allowed_override_modes' keys (overrideKey):
	// when there are some, a mode_override must be one of them.
	allowedOverrides map[uint32]bool
	// observability is observability_mode: messages are sent, answers
	// never awaited; deferredClose is how long the stream stays open
	// once the request is over (deferred_close_timeout).
	observability bool
	deferredClose time.Duration

	// requestAttributes and responseAttributes are sent with the request
	// and response headers messages (ProcessingRequest.attributes).
	requestAttributes, responseAttributes []attribute
	// modifier is processing_request_modifier, nil without it.
	modifier *attributeMapping

	// saver is on_processing_response, nil without it.
	saver *responseSaver

	// info is the filter state of filter_metadata, nil without it; it
	// is the same for every request, which no one modifies.
	info *loggingInfo

	stats filterStats
	log   logr.Logger
	pool  sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *config) NewFilter() httpfilter.Filter {
	f := c.pool.Get().(*filter)
	f.c = c
	return f
}

// Close implements io.Closer: the service channels.
func (c *config) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.http != nil {
		c.http.close()
	}
	var errs []error
	if c.svc != nil {
		errs = append(errs, c.svc.close())
	}
	for _, s := range c.services {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

var _ io.Closer = (*config)(nil)

// compile checks and compiles an ExternalProcessor. Fields Outrigger does
// not implement are refused with their path.
func compile(p *extprocv3.ExternalProcessor, ctx httpfilter.Context) (*config, error) {
	if err := refuseUnsupported(p); err != nil {
		return nil, err
	}
	if ctx.Stats == nil {
		return nil, httpfilter.ErrNoStats
	}
	reqAttrs, err := compileAttributes(p.GetRequestAttributes(), "request_attributes")
	if err != nil {
		return nil, err
	}
	respAttrs, err := compileAttributes(p.GetResponseAttributes(), "response_attributes")
	if err != nil {
		return nil, err
	}
	switch {
	case p.GetGrpcService() != nil && p.GetHttpService() != nil:
		// Envoy's words.
		return nil, errors.New("http_service: One and only one of grpc_service or http_service must be configured")
	case p.GetGrpcService() == nil && p.GetHttpService() == nil:
		return nil, errors.New("grpc_service: must be set (or http_service)")
	case ctx.Services == nil:
		return nil, errors.New("grpc_service: no gRPC service can be reached")
	}
	c := &config{
		name:              ctx.Name,
		upstream:          ctx.Upstream,
		failureModeAllow:  p.GetFailureModeAllow(),
		emitClientSpan:    p.GetEmitClientSpan() == nil || p.GetEmitClientSpan().GetValue(),
		messageTimeout:    defaultMessageTimeout,
		allowModeOverride: p.GetAllowModeOverride(),
		sendBodyEarly:     p.GetSendBodyWithoutWaitingForHeaderResponse(),
		allowCL:           p.GetAllowContentLengthHeader(),
		disableImmediate:  p.GetDisableImmediateResponse(),
		routeCache:        p.GetRouteCacheAction(),
		log:               ctx.Log,
		services:          map[string]*service{},

		requestAttributes:  reqAttrs,
		responseAttributes: respAttrs,
	}
	svcs := ctx.Services
	c.open = func(gs *corev3.GrpcService) (*service, error) {
		ch, err := svcs.OpenGRPC(gs)
		if err != nil {
			return nil, err
		}
		return newService(ch), nil
	}
	if hs := p.GetHttpService(); hs != nil {
		if c.http, err = compileHTTPService(hs, ctx.Services); err != nil {
			return nil, err
		}
	} else if c.svc, err = c.open(p.GetGrpcService()); err != nil {
		return nil, fmt.Errorf("grpc_service.%w", err)
	}
	fail := func(err error) (*config, error) {
		_ = c.Close()
		return nil, err
	}
	if p.GetDisableClearRouteCache() {
		if c.routeCache != extprocv3.ExternalProcessor_DEFAULT {
			// Envoy's words.
			return fail(errors.New("disable_clear_route_cache: disable_clear_route_cache and route_cache_action can not be set to none-default at the same time"))
		}
		c.routeCache = extprocv3.ExternalProcessor_RETAIN
	}
	if c.mode, err = compileMode(p.GetProcessingMode()); err != nil {
		return fail(fmt.Errorf("processing_mode.%w", err))
	}
	if c.http != nil {
		if m := c.mode; m.requestBody != extprocv3.ProcessingMode_NONE || m.responseBody != extprocv3.ProcessingMode_NONE || m.requestTrailers || m.responseTrailers {
			// Envoy's words.
			//lint:ignore ST1005 Envoy's message, kept as it is
			return fail(errors.New("processing_mode: If http_service is configured, processing modes can not send any body or trailer."))
		}
		if p.GetObservabilityMode() {
			return fail(errors.New("observability_mode: not supported by Outrigger with http_service"))
		}
	}
	if err := checkDuplex(p, c.mode, c.upstream); err != nil {
		return fail(err)
	}
	if c.sendBodyEarly && c.upstream {
		// An upstream filter's request body is the attempt's, which
		// cannot be read ahead of the attempt.
		return fail(errors.New("send_body_without_waiting_for_header_response: not supported by Outrigger in an upstream filter chain"))
	}
	if t := p.GetMessageTimeout(); t != nil {
		c.messageTimeout = t.AsDuration()
		if c.messageTimeout <= 0 {
			return fail(errors.New("message_timeout: must be greater than 0"))
		}
	}
	if t := p.GetMaxMessageTimeout(); t != nil {
		c.maxMessageTimeout = t.AsDuration()
		if c.maxMessageTimeout < 0 {
			return fail(errors.New("max_message_timeout: must not be negative"))
		}
	}
	if c.rules, err = mutationrules.Compile(p.GetMutationRules()); err != nil {
		return fail(fmt.Errorf("mutation_rules.%w", err))
	}
	if fr := p.GetForwardRules(); fr != nil {
		if c.allowed, err = compileMatchers(fr.GetAllowedHeaders(), "forward_rules.allowed_headers"); err != nil {
			return fail(err)
		}
		if c.disallowed, err = compileMatchers(fr.GetDisallowedHeaders(), "forward_rules.disallowed_headers"); err != nil {
			return fail(err)
		}
	}
	if c.ns, c.clusterNS, err = compileMetadataOptions(p.GetMetadataOptions()); err != nil {
		return fail(err)
	}
	if len(c.clusterNS.untyped)+len(c.clusterNS.typed) > 0 {
		c.clusters = ctx.Services
	}
	if pm := p.GetProcessingRequestModifier(); pm != nil {
		if c.modifier, err = compileRequestModifier(pm, "processing_request_modifier"); err != nil {
			return fail(err)
		}
	}
	if op := p.GetOnProcessingResponse(); op != nil {
		if c.saver, err = compileOnProcessingResponse(op); err != nil {
			return fail(err)
		}
	}
	if md := p.GetFilterMetadata(); md != nil {
		c.info = &loggingInfo{FilterMetadata: md}
	}
	c.statusOnError = statusOnError(p.GetStatusOnError())
	c.observability, c.deferredClose = p.GetObservabilityMode(), defaultDeferredClose
	if t := p.GetDeferredCloseTimeout(); t != nil {
		// Envoy uses it in observability_mode only, as here.
		if c.deferredClose = t.AsDuration(); c.deferredClose < 0 {
			return fail(errors.New("deferred_close_timeout: must not be negative"))
		}
	}
	if ms := p.GetAllowedOverrideModes(); len(ms) > 0 {
		c.allowedOverrides = make(map[uint32]bool, len(ms))
		for _, m := range ms {
			c.allowedOverrides[overrideKey(m)] = true
		}
	}
	prefix := "ext_proc."
	if sp := p.GetStatPrefix(); sp != "" {
		prefix += sp + "."
	}
	c.stats = newFilterStats(ctx.Stats, ctx.StatPrefix+prefix)
	c.pool.New = func() any { return &filter{} }
	return c, nil
}

// refuseUnsupported refuses the fields Outrigger does not implement with
// their paths.
func refuseUnsupported(p *extprocv3.ExternalProcessor) error {
	switch {
	case p.GetEmitClientSpan() != nil && p.GetHttpService() != nil:
		return errors.New("emit_client_span: not supported with http_service by Outrigger (only a gRPC processor's stream is traced, as in Envoy, whose HTTP client for ext_proc has no span)")
	}
	return nil
}

// compileMatchers compiles a ListStringMatcher found at path; nil stays
// nil.
func compileMatchers(l *matcherv3.ListStringMatcher, path string) (router.ListStringMatch, error) {
	if l == nil {
		return nil, nil
	}
	ms, err := router.CompileListStringMatch(l)
	if err != nil {
		return nil, fmt.Errorf("%s.%w", path, err)
	}
	return ms, nil
}

// forwards reports whether header name goes to the processor, as Envoy's
// headerCanBeForwarded: not disallowed, and allowed when there is an
// allow list.
func (c *config) forwards(name string) bool {
	return !c.disallowed.Matches(name) && (len(c.allowed) == 0 || c.allowed.Matches(name))
}

// serviceFor returns the channel of a per-route grpc_service override,
// opening it on first use; key is the override's serialized form.
func (c *config) serviceFor(gs *corev3.GrpcService, key string) (*service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.services[key]; ok {
		return s, nil
	}
	s, err := c.open(gs)
	if err != nil {
		return nil, err
	}
	c.services[key] = s
	return s, nil
}

// serviceKey is the key of a grpc_service override.
func serviceKey(gs *corev3.GrpcService) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(gs)
	return string(b)
}
