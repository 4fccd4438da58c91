package httpconn

import (
	"errors"
	"fmt"
	"io"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// httpFiltersCategory is the category of the extensions http_filters
// names.
const httpFiltersCategory = "envoy.filters.http"

// filterChain is the compiled http_filters list: the filters before the
// terminal one (the router), in order. The connection manager knows them
// only through the httpfilter interfaces.
type filterChain struct {
	filters []chainFilter
	// startChildSpan is the router's start_child_span;
	// suppressEnvoyHeaders its suppress_envoy_headers; noDynamicStats its
	// dynamic_stats set to false.
	startChildSpan, suppressEnvoyHeaders, noDynamicStats bool
	// strictCheck is the router's strict_check_headers;
	// respectExpectedTimeout its respect_expected_rq_timeout;
	// suppressGrpcCodeStats its suppress_grpc_request_failure_code_stats
	// (router_options.go).
	strictCheck                                   []string
	respectExpectedTimeout, suppressGrpcCodeStats bool
	// upstream is the router's upstream_http_filters, nil without them.
	upstream *httpfilter.UpstreamChain
	// upstreamLog is the router's upstream_log and its options, compiled
	// by the connection manager (see uplog.go).
	upstreamLog httpfilter.UpstreamLog
}

// routerConfig is the router's configuration as the connection manager
// reads it.
type routerConfig interface {
	StartChildSpan() bool
	SuppressEnvoyHeaders() bool
	DynamicStats() bool
}

// chainFilter is one compiled filter of the chain.
type chainFilter struct {
	// name is the filter's configured name, the key of its per-route
	// configuration and of the routes' FilterConfig.disabled.
	name   string
	config httpfilter.Config
	// disabled is HttpFilter.disabled: the filter runs only on routes
	// that enable it (a typed_per_filter_config entry for it).
	disabled bool
}

// buildFilters compiles http_filters (or an upgrade's filters, field
// names the list) with the factories of the extension registry. A filter
// is chosen by the type of its typed_config, as Envoy resolves it, so any
// name works; a filter without typed_config is chosen by its name, either
// spelling, with its empty configuration. The last filter must be the
// terminal one (the router), and only the last. An empty list means the
// router alone. Errors name the field path.
func buildFilters(field string, filters []*hcmv3.HttpFilter, reg *extension.Registry, ctx httpfilter.Context, rt RuntimeValues) (filterChain, error) {
	var fc filterChain
	if len(filters) > 0 && reg == nil {
		return fc, fmt.Errorf("%s: no HTTP filter is registered", field)
	}
	var errs []error
	for i, f := range filters {
		path := fmt.Sprintf("%s[%d]", field, i)
		last := i == len(filters)-1
		if f.GetDisabled() && last {
			// A disabled filter is compiled but runs only where a route
			// enables it; the router cannot be disabled.
			errs = append(errs, fmt.Errorf("%s.disabled: the router, the last filter, cannot be disabled", path))
			continue
		}
		if httpfilter.OptionalMissing(f, reg, lookupByName(rt), httpFiltersCategory) {
			logging.Warning(ctx.Log, "Didn't find a registered config factory for the optional http filter "+f.GetName(), "field", path)
			continue
		}
		factory, msg, err := resolveFilter(f, reg, lookupByName(rt))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		fctx := ctx
		fctx.Name = f.GetName()
		fctx.Extensions, fctx.LookupByName = reg, lookupByName(rt)
		cfg, err := factory.Compile(msg, fctx)
		if err != nil {
			errs = append(errs, httpfilter.PrefixErrors(path+".typed_config.", err))
			continue
		}
		terminal := isTerminal(cfg)
		switch {
		case terminal && !last:
			errs = append(errs, fmt.Errorf("%s: the router filter is terminal and must be the last filter", path))
		case !terminal && last:
			errs = append(errs, fmt.Errorf("%s: the last filter must be the router, a terminal filter", path))
		case !terminal:
			fc.filters = append(fc.filters, chainFilter{name: f.GetName(), config: cfg, disabled: f.GetDisabled()})
		default:
			if c, ok := cfg.(routerConfig); ok {
				fc.startChildSpan = c.StartChildSpan()
				fc.suppressEnvoyHeaders = c.SuppressEnvoyHeaders()
				fc.noDynamicStats = !c.DynamicStats()
			}
			if c, ok := cfg.(routerRequestOptions); ok {
				fc.strictCheck = c.StrictCheckHeaders()
				fc.respectExpectedTimeout = c.RespectExpectedRqTimeout()
				fc.suppressGrpcCodeStats = c.SuppressGrpcRequestFailureCodeStats()
			}
			if c, ok := cfg.(upstreamRouter); ok {
				fc.upstream = c.UpstreamFilters()
			}
			if c, ok := cfg.(upstreamLogRouter); ok {
				fc.upstreamLog = c.UpstreamLog()
			}
		}
	}
	return fc, errors.Join(errs...)
}

// lookupByName reports whether extensions may be found by name.
func lookupByName(rt RuntimeValues) bool {
	if rt == nil {
		return true
	}
	return extension.LookupByName(rt)
}

// isTerminal reports whether a compiled filter is the router.
func isTerminal(cfg httpfilter.Config) bool {
	t, ok := cfg.(httpfilter.Terminal)
	return ok && t.IsTerminal()
}

// resolveFilter finds the factory of an HTTP filter and decodes its
// configuration.
func resolveFilter(f *hcmv3.HttpFilter, reg *extension.Registry, byName bool) (httpfilter.Factory, proto.Message, error) {
	if f.GetTypedConfig() == nil && f.GetConfigDiscovery() != nil {
		return nil, nil, errors.New("config_discovery: not supported by Outrigger")
	}
	ext, msg, err := reg.Resolve(extension.Ref{
		Kind: "filter", Category: httpFiltersCategory, Name: f.GetName(), Config: f.GetTypedConfig(),
	}, byName)
	if err != nil {
		if up, ok := reg.LookupIn(httpfilter.UpstreamCategory, f.GetTypedConfig().GetTypeUrl()); ok && up.Category == httpfilter.UpstreamCategory && f.GetTypedConfig() != nil {
			// Envoy has no downstream factory for it either.
			return nil, nil, fmt.Errorf("typed_config: %s only ends an upstream filter chain (the router's upstream_http_filters, a cluster's http_protocol_options.http_filters)", up.Name)
		}
		return nil, nil, err
	}
	factory, ok := ext.Factory.(httpfilter.Factory)
	if !ok {
		return nil, nil, fmt.Errorf("typed_config: extension %q is not an HTTP filter", ext.Name)
	}
	return factory, msg, nil
}

// decodeFilters runs the filters on the request head, in order, each
// made for this request; false means one of them answered the request
// itself (or gave up on it) and the router does not run. A filter that
// its HttpFilter.disabled or the route's FilterConfig.disabled turns off
// is skipped, as Envoy leaves it out of the stream's chain: with any
// filter configured, the route is therefore matched first.
func (s *stream) decodeFilters() bool {
	chain := s.filterChain().filters
	if len(chain) == 0 {
		return true
	}
	route := s.Route()
	for i := range chain {
		cf := &chain[i]
		disabled := cf.disabled
		if route != nil && route.HasFilterConfigs() {
			if d, ok := route.FilterDisabled(cf.name, s.wc); ok {
				disabled = d
			}
		}
		if disabled {
			continue
		}
		f := cf.config.NewFilter()
		s.active = append(s.active, f)
		if d, ok := f.(httpfilter.Decoder); ok && d.DecodeHeaders(s) == httpfilter.Stop {
			if !s.started && !s.abandoned {
				// A filter must answer what it stops; one that did not
				// is a bug, which must not leave the client waiting.
				s.localReply(500, "", 0, "filter_stopped_without_reply")
			}
			return false
		}
	}
	return true
}

// encodeFilters runs the request's filters on the response head, in
// reverse order, before it is sent.
func (s *stream) encodeFilters() {
	for i := len(s.active) - 1; i >= 0; i-- {
		if e, ok := s.active[i].(httpfilter.Encoder); ok {
			e.EncodeHeaders(s)
			if s.redir.recreating {
				// The response is dropped: the filters after the
				// one that recreated the stream do not see it.
				return
			}
		}
	}
}

// destroyFilters tells the request's filters that it has ended, and
// forgets them.
func (s *stream) destroyFilters() {
	for i, f := range s.active {
		if d, ok := f.(httpfilter.Destroyer); ok {
			d.OnDestroy()
		}
		s.active[i] = nil
	}
	s.active = s.active[:0]
}

// The stream as the filters see it (httpfilter.Stream).

// Request implements httpfilter.Stream.
func (s *stream) Request() *router.Request { return &s.rreq }

// RequestHeaders implements httpfilter.Stream.
func (s *stream) RequestHeaders() router.HeaderEditor { return &s.reqHeaders }

// SetPath implements httpfilter.Stream.
func (s *stream) SetPath(path string) {
	s.path, s.rreq.Path = path, path
	s.entry.Path = path
}

// SetAuthority implements httpfilter.Stream.
func (s *stream) SetAuthority(host string) {
	s.authority, s.rreq.Host = host, host
	s.entry.Authority = host
}

// ResponseHeaders implements httpfilter.Stream.
func (s *stream) ResponseHeaders() router.HeaderEditor { return &s.respHeaders }

// ResponseStatus implements httpfilter.Stream.
func (s *stream) ResponseStatus() int { return s.status }

// SendLocalReply implements httpfilter.Stream.
func (s *stream) SendLocalReply(status int, body string, flags accesslog.ResponseFlags, details string) {
	s.localReply(status, body, flags, details)
}

// SendGrpcLocalReply implements httpfilter.Stream.
func (s *stream) SendGrpcLocalReply(status int, grpcStatus uint32, body string, flags accesslog.ResponseFlags, details string) {
	s.localReplyGrpc(status, int64(grpcStatus), body, flags, details)
}

// AddResponseFlags implements httpfilter.Stream.
func (s *stream) AddResponseFlags(flags accesslog.ResponseFlags) { s.flags |= flags }

// MarkHealthCheck implements httpfilter.Stream.
func (s *stream) MarkHealthCheck() { s.entry.HealthCheck = true }

// Route implements httpfilter.Stream: the route is matched on first use
// and kept until ClearRouteCache, with the weighted cluster it picks.
func (s *stream) Route() *router.Route {
	if !s.routed {
		s.routed = true
		t0 := s.timeRouteResolution()
		s.rreq.DynamicMetadata, s.rreq.FilterState = s.entry.DynamicMetadata, s.entry.FilterState
		s.rreq.ConnFilterState = s.entry.ConnFilterState
		s.cached = s.routes().table.MatchRequest(&s.rreq)
		s.clusterName, s.wc = "", -1
		if s.cached != nil {
			s.clusterName, s.wc = s.cached.PickClusterWith(s.weightedRandom(), s.rreq.Runtime)
			if h := s.cached.WeightedClusterHeader(s.wc); h != "" {
				// A weighted cluster's cluster_header, as a route's.
				s.clusterName, _ = s.reqHeaders.Get(h)
			} else if h := s.cached.ClusterHeader; h != "" {
				// cluster_header: the request names its cluster; a
				// missing header is a cluster that does not exist.
				s.clusterName, _ = s.reqHeaders.Get(h)
			} else if cs := s.cached.ClusterSpecifier; cs != nil {
				// A cluster specifier plugin picks it, once per
				// match, as Envoy's runs when the route is resolved.
				s.clusterName = cs.Cluster(&s.rreq)
			}
		}
		s.routeResolved(t0)
		s.refreshDuration(s.cached)
	}
	return s.cached
}

// ClusterName implements httpfilter.Stream.
func (s *stream) ClusterName() string {
	s.Route()
	return s.clusterName
}

// ClearRouteCache implements httpfilter.Stream.
func (s *stream) ClearRouteCache() {
	s.routed, s.cached = false, nil
}

// RouteConfig implements httpfilter.Stream.
func (s *stream) RouteConfig(name string) httpfilter.RouteConfig {
	r := s.Route()
	if r == nil {
		return nil
	}
	return r.FilterConfig(name, s.wc)
}

// RouteConfigs implements httpfilter.Stream.
func (s *stream) RouteConfigs(name string, dst []httpfilter.RouteConfig) []httpfilter.RouteConfig {
	r := s.Route()
	if r == nil {
		return dst
	}
	return r.FilterConfigs(name, s.wc, dst)
}

// RemoteIP implements httpfilter.Stream.
func (s *stream) RemoteIP() string { return s.remoteIP }

// ActiveSpan implements httpfilter.SpanSource: the request's span, made
// from the bare context an unsampled request keeps when a filter needs it
// after all (its call's span is a child of it, unsampled too).
func (s *stream) ActiveSpan() *tracing.Span { return s.requestSpan() }

// ConnectionState implements httpfilter.Stream.
func (s *stream) ConnectionState(key any, create func() any) any {
	return s.connState.get(key, create)
}

// DynamicMetadata implements httpfilter.Stream: the access log entry's.
func (s *stream) DynamicMetadata() *corev3.Metadata { return s.entry.DynamicMetadata }

// SetDynamicMetadata implements httpfilter.Stream.
func (s *stream) SetDynamicMetadata(namespace string, fields *structpb.Struct) {
	s.entry.DynamicMetadata = accesslog.MergeMetadata(s.entry.DynamicMetadata, namespace, fields)
}

// SetTypedDynamicMetadata implements httpfilter.Stream.
func (s *stream) SetTypedDynamicMetadata(namespace string, value *anypb.Any) {
	s.entry.DynamicMetadata = accesslog.SetTypedMetadata(s.entry.DynamicMetadata, namespace, value)
}

// LogEntry implements httpfilter.EntryReader: the access log's entry with
// what the stream knows now (fillEntry), as the route's own header edits
// read it.
func (s *stream) LogEntry() *accesslog.Entry {
	s.fillEntry(&s.entry, time.Now())
	return &s.entry
}

// SetFilterState implements httpfilter.Stream: the access log entry's.
func (s *stream) SetFilterState(key string, obj accesslog.FilterStateObject) {
	s.entry.SetFilterState(key, obj)
}

// FilterStateValue implements httpfilter.Stream: the request's own, else
// its connection's.
func (s *stream) FilterStateValue(key string) (any, bool) {
	if o, ok := s.entry.FilterState[key]; ok {
		return o, true
	}
	if s.netState != nil {
		return s.netState.FilterState(key)
	}
	return nil, false
}

// FilterState implements upstream.FilterStateReader: FilterStateValue,
// for the clusters that read the filter state.
func (s *stream) FilterState(key string) (any, bool) { return s.FilterStateValue(key) }

// filterStateHash is the hash of the filter state object under key (the
// request's, else the connection's), for hash policies' filter_state
// entries: false when there is none or it is not hashable
// (set_filter_state's envoy.hashable_string is).
func (s *stream) filterStateHash(key string) (uint64, bool) {
	v, _ := s.FilterStateValue(key)
	if h, ok := v.(filterstate.Hashable); ok {
		return h.Hash()
	}
	return 0, false
}

// Info implements httpfilter.Stream.
func (s *stream) Info() httpfilter.StreamInfo {
	return httpfilter.StreamInfo{
		RemoteAddress:       s.remote,
		LocalAddress:        s.local,
		DirectRemoteAddress: s.direct,
		TLS:                 s.tls,
		RequestedServerName: s.sni,
		Protocol:            s.proto,
		Start:               s.start,
		BytesReceived:       s.bytesRecv,
		ContentLength:       s.reqLength,
		MaxHeadersCount:     s.m.cfg.maxHeadersCount,
		UpstreamRequestSent: s.upSent,
		UpstreamHost:        s.entry.UpstreamHost,
	}
}

// close closes the compiled filter configurations that hold
// resources (see httpfilter.Config), once no request uses them.
func (fc *filterChain) close() {
	for _, f := range fc.filters {
		if c, ok := f.config.(io.Closer); ok {
			_ = c.Close()
		}
	}
	// The router's upstream_http_filters hold the same kinds of
	// resources (ext_proc's channels, Lua's call transports and shared
	// states).
	fc.upstream.Close()
}

// filterContext is what the filters' configurations may use of the
// server.
func filterContext(statPrefix string, deps Deps) httpfilter.Context {
	ctx := httpfilter.Context{
		Stats:      deps.Stats,
		StatPrefix: "http." + statPrefix + ".",
		Log:        deps.Log,
		Runtime:    noRuntime{},
		Now:        time.Now,
		// The node the tracers name is the bootstrap's, with the
		// command line's --service-cluster applied.
		ServiceCluster: deps.Tracing.Node.GetCluster(),
		NodeMetadata:   deps.Tracing.Node.GetMetadata(),
	}
	if deps.Health != nil {
		ctx.Health = deps.Health
	}
	if deps.Runtime != nil {
		ctx.Runtime = deps.Runtime
	}
	if deps.Now != nil {
		ctx.Now = deps.Now
	}
	if deps.Services != nil {
		ctx.Services = deps.Services
	}
	return ctx
}

// noRuntime is the runtime of a manager built without one: every key has
// its default.
type noRuntime struct{}

func (noRuntime) Uint64(_ string, def uint64) uint64 { return def }
func (noRuntime) Bool(_ string, def bool) bool       { return def }
