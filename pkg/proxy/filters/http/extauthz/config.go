package extauthz

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/structpb"

	alfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/authzservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/mutationrules"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// config is a compiled ExtAuthz.
type config struct {
	// name is the name the filter is configured with, the key of its
	// per-route configuration.
	name   string
	client checker
	// timeout bounds a check; 0 means none (the stream's own timeouts
	// still apply).
	timeout time.Duration
	// failureModeAllow lets a request through when the check fails;
	// failureModeHeader then adds x-envoy-auth-failure-mode-allowed.
	failureModeAllow, failureModeHeader bool
	statusOnError                       int
	// body is with_request_body; nil means the body is not sent.
	body            *bodySettings
	clearRouteCache bool
	// routeCacheHeaders are clear_route_cache_headers (lower case), nil
	// when unset: only edits of these headers clear the route cache.
	routeCacheHeaders map[string]bool
	// validateMutations is validate_mutations: an answer with an invalid
	// header or query edit is rejected (500).
	validateMutations bool
	// mutationRules are decoder_header_mutation_rules, nil when unset:
	// they decide the answer's request header edits.
	mutationRules *mutationrules.Rules
	// enabled is filter_enabled, nil when unset (always enabled);
	// denyAtDisable is deny_at_disable, nil when unset (false), read
	// through flags.
	enabled *runtime.Fraction
	// enabledMetadata is filter_enabled_metadata, nil when unset: a
	// request whose dynamic metadata does not match is not checked, as
	// one filter_enabled leaves out.
	enabledMetadata *alfilter.MetadataMatcher
	denyAtDisable   *runtime.FeatureFlag
	runtime         httpfilter.Runtime
	flags           runtime.BoolReader
	// allowed and disallowed filter the headers of the CheckRequest
	// (nil: no filtering); an HTTP service always has allowed.
	allowed, disallowed matchers
	encodeRawHeaders    bool
	// includeCert and includeTLS are include_peer_certificate and
	// include_tls_session.
	includeCert, includeTLS bool
	// maxDeniedBody caps a denied response's body; 0 means no cap.
	maxDeniedBody int
	// metadataNamespaces are the namespaces of the request's dynamic
	// metadata sent in the CheckRequest's metadata context.
	metadataNamespaces []string
	// routeNamespaces are route_metadata_context_namespaces: the
	// namespaces of the route's metadata sent in route_metadata_context.
	routeNamespaces []string
	// destinationLabels are the node metadata's labels under
	// bootstrap_metadata_labels_key, sent as the destination's labels.
	destinationLabels map[string]string
	// emitClientSpan is emit_client_span (default true): a traced
	// request's check has a span of its own, else it carries the
	// request span's context.
	emitClientSpan bool
	// ingestMetadata is enable_dynamic_metadata_ingestion (default true):
	// the service's dynamic metadata becomes the filter's.
	ingestMetadata bool
	// filterMetadata is filter_metadata (nil when unset) and
	// emitStateStats emit_filter_state_stats: either leaves a
	// loggingInfo in the filter state of each request checked.
	filterMetadata *structpb.Struct
	emitStateStats bool
	// shadowMode is shadow_mode: a check's decision is recorded in the
	// filter state (<name>.shadow), never enforced.
	shadowMode bool
	// enforceHeaderLimits is enforce_response_header_limits: the
	// service's response headers stop at max_headers_count.
	enforceHeaderLimits bool
	// chargeCluster is charge_cluster_response_stats (default true): a
	// denial counts in the route cluster's response code stats.
	chargeCluster bool

	stats filterStats
	// store and prefix name the per-cluster counters
	// (cluster.<name>.<prefix>ok), made on first use.
	store    *stats.Store
	prefix   string
	clusters sync.Map
	pool     sync.Pool
}

// bodySettings is a compiled BufferSettings.
type bodySettings struct {
	maxBytes     int
	allowPartial bool
	packAsBytes  bool
}

// NewFilter implements httpfilter.Config.
func (c *config) NewFilter() httpfilter.Filter {
	f := c.pool.Get().(*filter)
	f.c = c
	return f
}

// Close implements io.Closer: the service's channel or connections.
func (c *config) Close() error { return c.client.Close() }

var _ io.Closer = (*config)(nil)

// compile checks and compiles an ExtAuthz. Fields Outrigger does not
// implement are refused with their path.
func compile(p *extauthzv3.ExtAuthz, ctx httpfilter.Context) (*config, error) {
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	if err := authzservice.CheckTransportVersion(p.GetTransportApiVersion()); err != nil {
		return nil, err
	}
	c := &config{
		name:                ctx.Name,
		failureModeAllow:    p.GetFailureModeAllow(),
		failureModeHeader:   p.GetFailureModeAllowHeaderAdd(),
		statusOnError:       403,
		clearRouteCache:     p.GetClearRouteCache(),
		validateMutations:   p.GetValidateMutations(),
		filterMetadata:      p.GetFilterMetadata(),
		emitStateStats:      p.GetEmitFilterStateStats(),
		shadowMode:          p.GetShadowMode(),
		enforceHeaderLimits: p.GetEnforceResponseHeaderLimits(),
		runtime:             ctx.Runtime,
		encodeRawHeaders:    p.GetEncodeRawHeaders(),
		includeCert:         p.GetIncludePeerCertificate(),
		includeTLS:          p.GetIncludeTlsSession(),
		maxDeniedBody:       int(p.GetMaxDeniedResponseBodyBytes()),
		metadataNamespaces:  p.GetMetadataContextNamespaces(),
		routeNamespaces:     p.GetRouteMetadataContextNamespaces(),
		destinationLabels:   authzservice.NodeLabels(ctx.NodeMetadata, p.GetBootstrapMetadataLabelsKey()),
		chargeCluster:       p.GetChargeClusterResponseStats() == nil || p.GetChargeClusterResponseStats().GetValue(),
		ingestMetadata:      p.GetEnableDynamicMetadataIngestion() == nil || p.GetEnableDynamicMetadataIngestion().GetValue(),
		emitClientSpan:      p.GetEmitClientSpan() == nil || p.GetEmitClientSpan().GetValue(),
		store:               ctx.Stats,
	}
	for _, h := range p.GetClearRouteCacheHeaders() {
		if c.routeCacheHeaders == nil {
			c.routeCacheHeaders = map[string]bool{}
		}
		c.routeCacheHeaders[strings.ToLower(h)] = true
	}
	if r := p.GetDecoderHeaderMutationRules(); r != nil {
		rules, err := mutationrules.Compile(r)
		if err != nil {
			return nil, fmt.Errorf("decoder_header_mutation_rules.%w", err)
		}
		c.mutationRules = rules
	}
	if code := p.GetStatusOnError().GetCode(); code != 0 {
		c.statusOnError = int(code)
	}
	if b := p.GetWithRequestBody(); b != nil {
		c.body = compileBody(b)
	}
	if fe := p.GetFilterEnabled(); fe != nil {
		f, err := runtime.FractionOf(fe.GetRuntimeKey(), fe.GetDefaultValue())
		if err != nil {
			return nil, fmt.Errorf("filter_enabled.default_value.%w", err)
		}
		c.enabled = &f
	}
	if m := p.GetFilterEnabledMetadata(); m != nil {
		mm, err := alfilter.CompileMetadataMatcher(m)
		if err != nil {
			return nil, fmt.Errorf("filter_enabled_metadata.%w", err)
		}
		c.enabledMetadata = mm
	}
	if d := p.GetDenyAtDisable(); d != nil {
		c.denyAtDisable = &runtime.FeatureFlag{Key: d.GetRuntimeKey(), Default: d.GetDefaultValue().GetValue()}
		c.flags, _ = ctx.Runtime.(runtime.BoolReader)
	}
	var err error
	if p.GetHttpService() != nil {
		c.allowed, err = httpAllowedHeaders(p)
	} else {
		// For a gRPC service, every header unless allowed_headers
		// says otherwise.
		c.allowed, err = compileMatchers(p.GetAllowedHeaders(), "allowed_headers")
	}
	if err != nil {
		return nil, err
	}
	if c.disallowed, err = compileMatchers(p.GetDisallowedHeaders(), "disallowed_headers"); err != nil {
		return nil, err
	}
	c.prefix = "ext_authz."
	if sp := p.GetStatPrefix(); sp != "" {
		c.prefix += sp + "."
	}
	c.stats = newFilterStats(ctx.Stats, ctx.StatPrefix+c.prefix)

	switch s := p.GetServices().(type) {
	case *extauthzv3.ExtAuthz_GrpcService:
		c.client, c.timeout, err = openGRPC(s.GrpcService, ctx.Services, authzservice.DefaultTimeout)
		if err != nil {
			return nil, fmt.Errorf("grpc_service.%w", err)
		}
	case *extauthzv3.ExtAuthz_HttpService:
		c.client, c.timeout, err = newHTTPClient(s.HttpService, ctx.Services, 0)
		if err != nil {
			return nil, fmt.Errorf("http_service.%w", err)
		}
	default:
		return nil, errors.New("services: one of grpc_service or http_service is required")
	}
	c.pool.New = func() any { return &filter{} }
	return c, nil
}

// openGRPC opens a gRPC authorization service; its timeout is the
// service's, else def. Errors name the field below the GrpcService.
func openGRPC(gs *corev3.GrpcService, svc httpfilter.Services, def time.Duration) (*grpcClient, time.Duration, error) {
	var open authzservice.Opener
	if svc != nil {
		open = svc.OpenGRPC
	}
	c, timeout, err := authzservice.Open(gs, open, def)
	if err != nil {
		return nil, 0, err
	}
	return &grpcClient{c: c}, timeout, nil
}

// compileBody compiles a BufferSettings.
func compileBody(b *extauthzv3.BufferSettings) *bodySettings {
	return &bodySettings{
		maxBytes:     int(b.GetMaxRequestBytes()),
		allowPartial: b.GetAllowPartialMessage(),
		packAsBytes:  b.GetPackAsBytes(),
	}
}

// nameMatcher matches a header name.
type nameMatcher interface {
	Matches(name string) bool
}

// matchers is a compiled ListStringMatcher: a name matches when any
// pattern does.
type matchers []nameMatcher

// exactName matches one name.
type exactName string

// Matches implements nameMatcher.
func (e exactName) Matches(name string) bool { return string(e) == name }

// compileMatchers compiles a ListStringMatcher found at path; nil stays
// nil.
func compileMatchers(l *matcherv3.ListStringMatcher, path string) (matchers, error) {
	if l == nil {
		return nil, nil
	}
	list, err := router.CompileListStringMatch(l)
	if err != nil {
		return nil, fmt.Errorf("%s.%w", path, err)
	}
	ms := make(matchers, 0, len(list))
	for _, m := range list {
		ms = append(ms, m)
	}
	return ms, nil
}

// match reports whether name matches a pattern.
func (ms matchers) match(name string) bool {
	for _, m := range ms {
		if m.Matches(name) {
			return true
		}
	}
	return false
}
