// Package router compiles route configurations into tables and matches
// requests against them. It is pure: no I/O, no clocks, no goroutines, no
// globals, so it can be tested and fuzzed exhaustively. Matching a request
// allocates nothing.
package router

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Table is a compiled route configuration. It is immutable and safe for
// concurrent use.
type Table struct {
	Name  string
	hosts vhostIndex
	// ignorePort strips the :authority's port before virtual host
	// matching (ignore_port_in_host_matching).
	ignorePort bool
	// vhostHeader, when not "", is the request header (lower case) whose
	// first value picks the virtual host instead of the :authority
	// (vhost_header).
	vhostHeader string
	// ignorePathParams cuts the path at its first ';' before path
	// matching (ignore_path_parameters_in_path_matching).
	ignorePathParams bool
	// InternalOnlyHeaders are removed from requests that are not
	// internal (internal_only_headers), lower case.
	InternalOnlyHeaders []string
	// VirtualClusters are every virtual host's virtual clusters, the
	// catch-alls included, by their Index.
	VirtualClusters []*VirtualCluster
	// StatRoutes are the routes with a stat_prefix, by their StatIndex.
	StatRoutes []*Route
}

// VirtualHost is a compiled virtual host.
type VirtualHost struct {
	Name   string
	Routes []*Route
	// Metadata is the virtual host's metadata (%METADATA(VIRTUAL_HOST:...)%),
	// nil when it has none.
	Metadata *corev3.Metadata
	// Cors is the virtual host's CORS policy, nil when it has none.
	Cors *CorsPolicy
	// RateLimits are the virtual host's rate_limits.
	RateLimits []*RateLimit
	// IncludeRequestAttemptCount and IncludeAttemptCountInResponse
	// send x-envoy-attempt-count upstream and downstream
	// (include_request_attempt_count, include_attempt_count_in_response).
	IncludeRequestAttemptCount, IncludeAttemptCountInResponse bool
	// IncludeIsTimeoutRetryHeader sends x-envoy-is-timeout-retry
	// upstream on retries: "true" for those a per-try timeout started,
	// "false" for the others (include_is_timeout_retry_header).
	IncludeIsTimeoutRetryHeader bool
	// RetryPolicy is the virtual host's retry_policy, nil when it has
	// none; a route's own replaces it.
	RetryPolicy *RetryPolicy
	// HedgePolicySet and HedgeOnPerTryTimeout are the virtual host's
	// hedge_policy; a route's own replaces it.
	HedgePolicySet, HedgeOnPerTryTimeout bool
	// VirtualClusters are the virtual host's virtual_clusters (see
	// VirtualHost.VirtualCluster); otherCluster is their catch-all, nil
	// when there are none.
	VirtualClusters []*VirtualCluster
	otherCluster    *VirtualCluster
	// routeIndex narrows Routes to those a path's first segment allows
	// (see routeIndex); nil when it would not, and Routes are scanned.
	routeIndex *routeIndex
	// readsHeaders: a route's header matcher reads a regular header,
	// which MatchRequest then keeps in a memo for the next route.
	readsHeaders bool
	// mirrors are the virtual host's request_mirror_policies, or the
	// route configuration's when it has none: those of its routes that
	// set none.
	mirrors []*MirrorPolicy
	// bodyLimit is the virtual host's request body buffer limit, which
	// its routes inherit.
	bodyLimit bodyBufferLimit
	// requireTLS is the virtual host's require_tls; sslRedirect the route
	// of a request it sends to HTTPS (nil with NONE).
	requireTLS  routev3.VirtualHost_TlsRequirementType
	sslRedirect *Route
}

// Route is one compiled route. Exactly one of Cluster, WeightedClusters,
// ClusterHeader, ClusterSpecifier, Direct and Redirect is set, or none
// for a non_forwarding_action.
type Route struct {
	// Name is the route's name (%ROUTE_NAME%), "" when unnamed.
	Name string
	// Metadata is the route's metadata, nil when it has none; it is
	// kept for readers such as access-log formatters.
	Metadata *corev3.Metadata
	// StatPrefix is the route's stat_prefix: its stats are
	// vhost.<virtual host>.route.<StatPrefix>.*; "" for none.
	// StatIndex is its position in Table.StatRoutes (-1 without one).
	StatPrefix string
	StatIndex  int
	// VirtualHost is the virtual host the route belongs to.
	VirtualHost *VirtualHost

	// Cluster is the upstream cluster of a route action with cluster.
	Cluster string
	// WeightedClusters is set for a route action with weighted_clusters.
	WeightedClusters *WeightedClusters
	// ClusterHeader, for a route action with cluster_header, is the
	// request header (lower case) that names the cluster of each request.
	ClusterHeader string
	// ClusterSpecifier, for a route action with cluster_specifier_plugin
	// or inline_cluster_specifier_plugin, picks the cluster of each
	// request.
	ClusterSpecifier ClusterSpecifier
	// ClusterNotFoundStatus is the status answered when the cluster does
	// not exist (cluster_not_found_response_code, default 503).
	ClusterNotFoundStatus int
	// MetadataMatch is the route action's metadata_match criteria, nil
	// when it has none (see MetadataMatchFor).
	MetadataMatch *upstream.MetadataMatch
	// RetryPolicy is the route action's retry_policy, else its virtual
	// host's; nil for none.
	RetryPolicy *RetryPolicy
	// HedgeOnPerTryTimeout is hedge_policy.hedge_on_per_try_timeout, the
	// route action's hedge_policy, else its virtual host's: a per-try
	// timeout starts another attempt without resetting the one in flight.
	HedgeOnPerTryTimeout bool
	// hedgeSet: the route action has a hedge_policy of its own.
	hedgeSet bool
	// Timeout is the upstream timeout of a route action: DefaultTimeout
	// when unset, 0 for none.
	Timeout time.Duration
	// StreamDuration is the route action's max_stream_duration, nil
	// when unset; its presence also lifts Timeout (see compileRouteAction).
	StreamDuration *StreamDuration
	// GrpcTimeout is the deprecated max_grpc_timeout with its
	// grpc_timeout_offset, nil when unset or when StreamDuration is set.
	GrpcTimeout *GrpcTimeout
	// HostRewrite, when not "", replaces the :authority sent upstream
	// (host_rewrite_literal).
	HostRewrite string
	// AutoHostRewrite: the :authority sent upstream is the chosen
	// host's hostname, when it has one (auto_host_rewrite).
	AutoHostRewrite bool
	// HighPriority is priority: HIGH. The route's requests count against
	// the cluster's HIGH circuit breakers, as in Envoy.
	HighPriority bool
	// AppendXForwardedHost: a rewritten host's original value is
	// appended to x-forwarded-host (append_x_forwarded_host).
	AppendXForwardedHost bool
	// Cors is the route's CORS policy (route.cors), nil when it has none.
	Cors *CorsPolicy
	// RateLimits are the route action's rate_limits;
	// IncludeVHRateLimits its include_vh_rate_limits.
	RateLimits          []*RateLimit
	IncludeVHRateLimits bool
	// HashPolicy is the route action's hash_policy, nil when it has none
	// (or only entries that hash nothing).
	HashPolicy *HashPolicy

	// Decorator is the route's decorator (the span's operation), nil
	// when it has none.
	Decorator *Decorator
	// Tracing is the route's tracing, nil when it has none.
	Tracing *RouteTracing
	// Connect is set when the route terminates CONNECT requests
	// (upgrade_configs with connect_config).
	Connect *ConnectConfig
	// Mirrors are the request_mirror_policies in force: the route
	// action's, else its virtual host's, else the route
	// configuration's; nil for none.
	Mirrors []*MirrorPolicy

	// Direct is set when the route answers directly.
	Direct *DirectResponse
	// InternalRedirect is the route action's internal redirect policy,
	// nil when the route passes redirects through (internalredirect.go).
	InternalRedirect *InternalRedirectPolicy
	// Redirect is set when the route answers with a redirect.
	Redirect *Redirect

	match routeMatch
	// neverMatches: the route's cluster specifier plugin is an optional
	// one Outrigger does not have. Envoy's null plugin makes such a
	// route match no request; the table leaves it out.
	neverMatches bool
	rewrite      rewrite
	hostRewrite  hostRewrite
	// pathFormat and hostFormat are the route action's path_rewrite and
	// host_rewrite formats, nil without them (pathformat.go).
	pathFormat, hostFormat *accesslog.Formatter
	// bodyLimit is the route's request body buffer limit, its virtual
	// host's filling what it leaves unset (bufferlimit.go).
	bodyLimit      bodyBufferLimit
	idleTimeout    time.Duration
	idleTimeoutSet bool
	// flushTimeout is flush_timeout (see FlushTimeout).
	flushTimeout    time.Duration
	flushTimeoutSet bool
	// upgrades is the route action's upgrade_configs (see Upgrade).
	upgrades upgradeMap
	// requestOps and responseOps are the header mutations of the route,
	// its virtual host and the route configuration, in application order
	// (later levels win).
	requestOps  []*headerOps
	responseOps []*headerOps
	// readsUpConn: a response header format or span name format of the
	// route may show the upstream connection (see ReadsUpstreamConnection).
	readsUpConn bool
	// perFilter are the typed_per_filter_config levels, most specific
	// first (see FilterConfig); anyFilterConfig is set when they, or a
	// weighted cluster's, have an entry.
	perFilter       []filterConfigs
	anyFilterConfig bool
}

// Compile builds a table with no typed_per_filter_config support (see
// CompileWith).
func Compile(rc *routev3.RouteConfiguration) (*Table, error) {
	return CompileWith(rc, Options{})
}

// CompileWith builds a table, compiling typed_per_filter_config entries
// with opts.FilterConfig. Errors name the field path below the route
// configuration, e.g. "virtual_hosts[0].routes[2].match.safe_regex.regex".
func CompileWith(rc *routev3.RouteConfiguration, opts Options) (*Table, error) {
	t := &Table{
		Name:             rc.GetName(),
		ignorePort:       rc.GetIgnorePortInHostMatching(),
		vhostHeader:      strings.ToLower(rc.GetVhostHeader()),
		ignorePathParams: rc.GetIgnorePathParametersInPathMatching(),
	}
	for i, name := range rc.GetInternalOnlyHeaders() {
		name = strings.ToLower(name)
		if err := modifiable(name); err != nil {
			return nil, fmt.Errorf("internal_only_headers[%d]: %w", i, err)
		}
		t.InternalOnlyHeaders = append(t.InternalOnlyHeaders, name)
	}
	maxBody := uint32(DefaultMaxDirectResponseBodySize)
	if m := rc.GetMaxDirectResponseBodySizeBytes(); m != nil {
		maxBody = m.GetValue()
	}
	// Every virtual host and route is compiled even after a failure, so
	// that one run reports all of the table's problems.
	var errs []error
	reqGlobal, err := compileHeaderOps(rc.GetRequestHeadersToAdd(), rc.GetRequestHeadersToRemove(), "request_headers_to_add", "request_headers_to_remove")
	errs = append(errs, err)
	respGlobal, err := compileHeaderOps(rc.GetResponseHeadersToAdd(), rc.GetResponseHeadersToRemove(), "response_headers_to_add", "response_headers_to_remove")
	errs = append(errs, err)
	mostSpecificWins := rc.GetMostSpecificHeaderMutationsWins()
	filtersGlobal, err := compileFilterConfigs(rc.GetTypedPerFilterConfig(), &opts)
	errs = append(errs, err)
	mirrorsGlobal, err := compileMirrorPolicies(rc.GetRequestMirrorPolicies())
	errs = append(errs, fieldpath.Prefix("request_mirror_policies", err))
	// The plugins first: routes name them.
	opts.plugins, err = compileClusterSpecifiers(rc.GetClusterSpecifierPlugins(), &opts)
	errs = append(errs, err)

	b := newVhostBuilder()
	headerIDs := map[string]int{}
	for i, vhc := range rc.GetVirtualHosts() {
		vhPath := fmt.Sprintf("virtual_hosts[%d].", i)
		vh, filtersVH, err := compileVirtualHost(vhc, &opts)
		errs = append(errs, fieldpath.Prefix(vhPath, err))
		if vh == nil {
			// Its routes are still checked, for their own problems.
			vh = &VirtualHost{Name: vhc.GetName()}
		}
		errs = append(errs, fieldpath.Prefix(vhPath, compileVirtualClusters(vh, vhc.GetVirtualClusters(), len(t.VirtualClusters))))
		if vh.mirrors == nil {
			vh.mirrors = mirrorsGlobal
		}
		t.VirtualClusters = append(t.VirtualClusters, vh.VirtualClusters...)
		if vh.otherCluster != nil {
			t.VirtualClusters = append(t.VirtualClusters, vh.otherCluster)
		}
		reqVH, err := compileHeaderOps(vhc.GetRequestHeadersToAdd(), vhc.GetRequestHeadersToRemove(), "request_headers_to_add", "request_headers_to_remove")
		errs = append(errs, fieldpath.Prefix(vhPath, err))
		respVH, err := compileHeaderOps(vhc.GetResponseHeadersToAdd(), vhc.GetResponseHeadersToRemove(), "response_headers_to_add", "response_headers_to_remove")
		errs = append(errs, fieldpath.Prefix(vhPath, err))
		for j, rtc := range vhc.GetRoutes() {
			r, filtersRoute, err := compileRoute(rtc, maxBody, &opts)
			if err != nil {
				errs = append(errs, fieldpath.Prefix(fmt.Sprintf("%sroutes[%d].", vhPath, j), err))
				continue
			}
			if r.neverMatches {
				continue
			}
			r.VirtualHost = vh
			if r.Mirrors == nil && r.Direct == nil && r.Redirect == nil {
				r.Mirrors = vh.mirrors
			}
			if r.RetryPolicy == nil && (r.Cluster != "" || r.WeightedClusters != nil || r.ClusterHeader != "" || r.ClusterSpecifier != nil) {
				r.RetryPolicy = vh.RetryPolicy
			}
			r.bodyLimit.inherit(vh.bodyLimit)
			if !r.hedgeSet && vh.HedgePolicySet {
				r.HedgeOnPerTryTimeout = vh.HedgeOnPerTryTimeout
			}
			if r.StatPrefix != "" {
				r.StatIndex = len(t.StatRoutes)
				t.StatRoutes = append(t.StatRoutes, r)
			}
			r.requestOps = levels(r.requestOps, reqVH, reqGlobal, mostSpecificWins)
			r.responseOps = levels(r.responseOps, respVH, respGlobal, mostSpecificWins)
			r.readsUpConn = opsReadUpstreamConnection(r.responseOps) || r.Tracing.readsUpstreamConnection()
			r.perFilter = levelsOf(filtersRoute, filtersVH, filtersGlobal)
			r.anyFilterConfig = len(r.perFilter) > 0 || r.WeightedClusters.hasFilterConfigs()
			vh.Routes = append(vh.Routes, r)
		}
		vh.routeIndex = buildRouteIndex(vh.Routes, t.ignorePathParams)
		vh.readsHeaders = numberHeaderNames(vh.Routes, headerIDs)
		for j, d := range vhc.GetDomains() {
			if err := b.add(d, vh); err != nil {
				errs = append(errs, fmt.Errorf("%sdomains[%d]: %w", vhPath, j, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.hosts = b.build()
	return t, nil
}

// levels orders one direction's header mutations: by default route, then
// virtual host, then route configuration, so the most general level is
// applied last and wins; most_specific_header_mutations_wins reverses it.
// route holds the route's own level (nil or one entry).
func levels(route []*headerOps, vh, global *headerOps, mostSpecificWins bool) []*headerOps {
	var own *headerOps
	if len(route) > 0 {
		own = route[0]
	}
	order := []*headerOps{own, vh, global}
	if mostSpecificWins {
		order = []*headerOps{global, vh, own}
	}
	var out []*headerOps
	for _, l := range order {
		if l != nil {
			out = append(out, l)
		}
	}
	return out
}

// compileVirtualHost compiles a virtual host's own settings (not its
// routes): its CORS policy, rate limits and typed_per_filter_config,
// returned apart. Errors name the field below the virtual host.
func compileVirtualHost(vhc *routev3.VirtualHost, opts *Options) (*VirtualHost, filterConfigs, error) {
	vh := &VirtualHost{
		Name:                          vhc.GetName(),
		Metadata:                      vhc.GetMetadata(),
		IncludeRequestAttemptCount:    vhc.GetIncludeRequestAttemptCount(),
		IncludeAttemptCountInResponse: vhc.GetIncludeAttemptCountInResponse(),
		IncludeIsTimeoutRetryHeader:   vhc.GetIncludeIsTimeoutRetryHeader(),
	}
	//lint:ignore SA1019 Envoy still honours a virtual host's deprecated cors field
	if c := vhc.GetCors(); c != nil {
		p, err := CompileCorsPolicy(c)
		if err != nil {
			return nil, nil, fmt.Errorf("cors.%w", err)
		}
		vh.Cors = p
	}
	rls, err := compileRateLimits(vhc.GetRateLimits())
	if err != nil {
		return nil, nil, fmt.Errorf("rate_limits%w", err)
	}
	vh.RateLimits = rls
	if vh.mirrors, err = compileMirrorPolicies(vhc.GetRequestMirrorPolicies()); err != nil {
		return nil, nil, fmt.Errorf("request_mirror_policies%w", err)
	}
	if vh.RetryPolicy, err = compileRetryPolicy(vhc.GetRetryPolicy()); err != nil {
		return nil, nil, fmt.Errorf("retry_policy.%w", err)
	}
	if hp := vhc.GetHedgePolicy(); hp != nil {
		if vh.HedgeOnPerTryTimeout, err = compileHedgePolicy(hp); err != nil {
			return nil, nil, fmt.Errorf("hedge_policy.%w", err)
		}
		vh.HedgePolicySet = true
	}
	//lint:ignore SA1019 Envoy still honours the deprecated per_request_buffer_limit_bytes
	if vh.bodyLimit, err = compileBodyBufferLimit(vhc.GetPerRequestBufferLimitBytes(), vhc.GetRequestBodyBufferLimit()); err != nil {
		return nil, nil, err
	}
	vh.setRequireTLS(vhc.GetRequireTls())
	fc, err := compileFilterConfigs(vhc.GetTypedPerFilterConfig(), opts)
	if err != nil {
		return nil, nil, err
	}
	return vh, fc, nil
}

// compileRoute compiles one route, and returns its own
// typed_per_filter_config apart; errors name the field below it.
func compileRoute(rc *routev3.Route, maxBody uint32, opts *Options) (*Route, filterConfigs, error) {
	r := &Route{Name: rc.GetName(), Metadata: rc.GetMetadata(), StatPrefix: rc.GetStatPrefix(), StatIndex: -1}
	var err error
	//lint:ignore SA1019 Envoy still honours the deprecated per_request_buffer_limit_bytes
	if r.bodyLimit, err = compileBodyBufferLimit(rc.GetPerRequestBufferLimitBytes(), rc.GetRequestBodyBufferLimit()); err != nil {
		return nil, nil, err
	}
	if d := rc.GetDecorator(); d != nil {
		r.Decorator = compileDecorator(d)
	}
	if t := rc.GetTracing(); t != nil {
		rt, err := compileRouteTracing(t)
		if err != nil {
			return nil, nil, fmt.Errorf("tracing.%w", err)
		}
		r.Tracing = rt
	}
	if rc.GetMatch() == nil {
		return nil, nil, errors.New("match: a route match is required")
	}
	m, err := compileMatch(rc.GetMatch())
	if err == nil {
		err = compileDynamicMetadata(rc.GetMatch(), &m, opts)
	}
	if err == nil {
		err = compileFilterState(rc.GetMatch(), &m)
	}
	if err == nil {
		err = compileCookies(rc.GetMatch(), &m)
	}
	if err == nil {
		compileTLSMatch(rc.GetMatch(), &m)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("match.%w", err)
	}
	r.match = m
	switch a := rc.GetAction().(type) {
	case *routev3.Route_Route:
		if err := compileRouteAction(r, a.Route, opts); err != nil {
			return nil, nil, fmt.Errorf("route.%w", err)
		}
	case *routev3.Route_DirectResponse:
		d, err := compileDirect(a.DirectResponse, maxBody, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("direct_response.%w", err)
		}
		r.Direct = d
	case *routev3.Route_Redirect:
		rd, err := compileRedirect(a.Redirect)
		if err != nil {
			return nil, nil, fmt.Errorf("redirect.%w", err)
		}
		r.Redirect = rd
	case *routev3.Route_NonForwardingAction:
		// For the filters that answer such routes themselves; a request
		// that reaches the router finds no cluster, as Envoy's finds
		// the empty cluster name: 503, NC (cluster_not_found).
		r.ClusterNotFoundStatus, r.Timeout = 503, DefaultTimeout
	case nil:
		return nil, nil, errors.New("action: one of route, redirect or direct_response is required")
	default:
		return nil, nil, fmt.Errorf("action: %s is not supported by Outrigger", oneofName(rc.ProtoReflect(), "action"))
	}
	req, err := compileHeaderOps(rc.GetRequestHeadersToAdd(), rc.GetRequestHeadersToRemove(), "request_headers_to_add", "request_headers_to_remove")
	if err != nil {
		return nil, nil, err
	}
	resp, err := compileHeaderOps(rc.GetResponseHeadersToAdd(), rc.GetResponseHeadersToRemove(), "response_headers_to_add", "response_headers_to_remove")
	if err != nil {
		return nil, nil, err
	}
	if req != nil {
		r.requestOps = []*headerOps{req}
	}
	if resp != nil {
		r.responseOps = []*headerOps{resp}
	}
	fc, err := compileFilterConfigs(rc.GetTypedPerFilterConfig(), opts)
	if err != nil {
		return nil, nil, err
	}
	return r, fc, nil
}

// Match finds the route for a host (the :authority, port allowed) and a
// path (query string allowed), with no other headers. It returns nil when
// nothing matches.
func (t *Table) Match(host, path string) *Route {
	req := Request{Host: host, Path: path}
	return t.MatchRequest(&req)
}

// MatchRequest finds the route for a request: the virtual host by its
// :authority, then the first route of that virtual host whose match
// accepts the request. It returns nil when nothing matches (404 with the
// NR response flag). It allocates nothing.
func (t *Table) MatchRequest(req *Request) *Route {
	vh := t.virtualHost(req)
	if vh == nil {
		return nil
	}
	if vh.sslRedirect != nil && vh.needsRedirectToTLS(req) {
		return vh.sslRedirect
	}
	path := pathOnly(req.Path)
	if t.ignorePathParams {
		// As Envoy's sanitizePathBeforePathMatching: the path up to
		// its first ';' (uri templates read the whole path).
		if i := strings.IndexByte(path, ';'); i >= 0 {
			path = path[:i]
		}
	}
	if !vh.readsHeaders {
		if vh.routeIndex != nil {
			return vh.routeIndex.match(req, path)
		}
		return vh.scanRoutes(req, path)
	}
	req.memo = headerMemo{on: true}
	var r *Route
	if vh.routeIndex != nil {
		r = vh.routeIndex.match(req, path)
	} else {
		r = vh.scanRoutes(req, path)
	}
	req.memo = headerMemo{}
	return r
}

// scanRoutes is the first of the virtual host's routes that accepts req,
// trying every route in order (what the route index must agree with).
func (vh *VirtualHost) scanRoutes(req *Request, path string) *Route {
	for _, r := range vh.Routes {
		if r.match.matchesPath(req, path) {
			return r
		}
	}
	return nil
}

// virtualHost picks the virtual host for a request: by its :authority,
// or by the first value of vhost_header, without which (as in Envoy)
// only a table whose one virtual host is "*" has one.
func (t *Table) virtualHost(req *Request) *VirtualHost {
	host := req.Host
	if t.vhostHeader != "" {
		v, ok := req.header(t.vhostHeader)
		if !ok {
			if t.hosts.onlyCatchAll() {
				return t.hosts.any
			}
			return nil
		}
		// Headers.Get joins repeated values with ",": the first is
		// the one Envoy reads.
		host, _, _ = strings.Cut(v, ",")
	}
	if t.ignorePort {
		if i := portStart(host); i >= 0 {
			host = host[:i]
		}
	}
	return t.hosts.find(host)
}

// ClusterName is the upstream cluster for one request: the route's
// cluster, or one of its weighted clusters chosen with random (a fresh
// random number per request). It is "" for direct responses and
// redirects.
func (r *Route) ClusterName(random uint64) string {
	name, _ := r.PickCluster(random)
	return name
}

// PickCluster is ClusterName, and the index of the weighted cluster
// picked (-1 when the route has none), which selects that cluster's
// typed_per_filter_config.
func (r *Route) PickCluster(random uint64) (name string, index int) {
	if r.WeightedClusters != nil {
		i := r.WeightedClusters.PickIndex(random)
		return r.WeightedClusters.Clusters[i].Name, i
	}
	return r.Cluster, -1
}

// IdleTimeout is the route's idle_timeout and whether it sets one; when it
// does not, the connection manager's stream idle timeout applies. 0
// disables it.
func (r *Route) IdleTimeout() (time.Duration, bool) { return r.idleTimeout, r.idleTimeoutSet }

// FlushTimeout is the route's flush_timeout and whether it sets one: how
// long a stream whose response has all been produced may wait on the
// client's flow control to send it. 0 disables it.
func (r *Route) FlushTimeout() (time.Duration, bool) { return r.flushTimeout, r.flushTimeoutSet }

// RewritesPath reports whether RewritePath changes paths, so the caller
// knows to keep the original path (x-envoy-original-path) only then.
func (r *Route) RewritesPath() bool { return r.rewrite.active() }

// RewritePath applies prefix_rewrite or regex_rewrite to the path the
// route matched (query string included, and kept). It returns path
// unchanged when the route rewrites nothing.
func (r *Route) RewritePath(path string) string {
	if !r.rewrite.active() {
		return path
	}
	return r.rewrite.apply(path, r.matchedLen(path))
}

// matchedLen is how much of path the route's path matcher matched: the
// prefix for prefix matches, the whole path without its query otherwise.
func (r *Route) matchedLen(path string) int {
	switch r.match.kind {
	case pathPrefix, pathSeparatedPrefix:
		if len(r.match.value) <= len(path) {
			return len(r.match.value)
		}
	}
	return len(pathOnly(path))
}

// RedirectLocation is the Location header of a redirect route for req; ""
// when the route is not a redirect. e supplies the values of a
// path_rewrite format (nil: the request's path alone).
func (r *Route) RedirectLocation(req *Request, e *accesslog.Entry) string {
	if r.Redirect == nil {
		return ""
	}
	return r.Redirect.location(req, r.matchedLen(req.Path), e)
}

// MutateRequestHeaders applies request_headers_to_remove and
// request_headers_to_add of the route, its virtual host and the route
// configuration, in Envoy's order. e supplies the values of % operators
// (it may be nil when no value uses them). Literal values allocate
// nothing.
func (r *Route) MutateRequestHeaders(h HeaderEditor, e *accesslog.Entry) {
	for _, ops := range r.requestOps {
		ops.apply(h, e)
	}
}

// MutateResponseHeaders applies the response_headers_to_remove and
// response_headers_to_add of the three levels, as MutateRequestHeaders
// does. It applies to every response of the route: upstream, direct or
// redirect.
func (r *Route) MutateResponseHeaders(h HeaderEditor, e *accesslog.Entry) {
	for _, ops := range r.responseOps {
		ops.apply(h, e)
	}
}

// ReadsUpstreamConnection reports whether the route's response header
// formats or span name formats may read the access-log entry's upstream
// connection (%UPSTREAM_LOCAL_ADDRESS%, %UPSTREAM_TLS_*%...), which the
// connection manager then fills in for an HTTP/2 upstream.
func (r *Route) ReadsUpstreamConnection() bool { return r.readsUpConn }

// oneofName is the name of the field set in the named oneof of m, for
// "not supported" errors.
func oneofName(m protoreflect.Message, oneof protoreflect.Name) string {
	od := m.Descriptor().Oneofs().ByName(oneof)
	if od == nil {
		return string(oneof)
	}
	if fd := m.WhichOneof(od); fd != nil {
		return string(fd.Name())
	}
	return string(oneof)
}
