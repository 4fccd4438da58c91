package cluster

import (
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// httpOptionsKeys are the typed_extension_protocol_options keys that name
// the HTTP protocol options: the type name, which Envoy's documentation
// uses, and the extension name in both spellings.
var httpOptionsKeys = map[string]bool{
	string(proto.MessageName(&httpv3.HttpProtocolOptions{})): true,
	"envoy.upstreams.http.http_protocol_options":             true,
	"proxy.upstreams.http.http_protocol_options":             true,
}

// errH2MaxRequests refuses max_requests_per_connection where requests may
// go over HTTP/2: Go's HTTP/2 transport has no per-connection request
// limit, so accepting it would leave those connections unbounded.
const errH2MaxRequests = "not supported by Outrigger for HTTP/2 upstream connections (it applies to HTTP/1.1 clusters)"

// defaultIdleTimeout is how long an upstream connection may stay unused
// before it is closed, when the configuration does not say (Envoy: 1 h).
const defaultIdleTimeout = time.Hour

// protocolSettings are a cluster's HTTP protocol choices.
type protocolSettings struct {
	// upstreamFilters is the cluster's upstream HTTP filter chain
	// (HttpProtocolOptions.http_filters), nil without one.
	upstreamFilters *httpfilter.UpstreamChain
	http2           bool
	// downstream: the protocol follows the client's
	// (use_downstream_protocol_config, or protocol_selection
	// USE_DOWNSTREAM_PROTOCOL): HTTP/2 for an HTTP/2 client, HTTP/1.1 for
	// the others; http2 is then false.
	downstream bool
	// auto: auto_config, HTTP/2 or HTTP/1.1 by what ALPN negotiates with
	// the upstream (TLS clusters; a plaintext one speaks HTTP/1.1, as in
	// Envoy); http2 and downstream are then false.
	auto bool
	// idleTimeout closes connections unused that long; 0 never does.
	idleTimeout time.Duration
	// maxRequestsPerConn closes an HTTP/1.1 connection after that many
	// requests; 0 means no limit.
	maxRequestsPerConn uint32
	// maxStreamDuration ends an upstream request that long after it got
	// its connection; 0 never does.
	maxStreamDuration time.Duration
	// h2 are the HTTP/2 flood limits of upstream connections.
	h2 h2Limits
	// h1Format is how HTTP/1.1 requests are written: field names in
	// proper case (header_key_format.proper_case_words), the target in
	// absolute form (send_fully_qualified_url).
	h1Format upstream.HTTP1Format
	// enableTrailers carries HTTP/1.1 trailers to and from the upstream
	// (http_protocol_options.enable_trailers).
	enableTrailers bool
	// maxResponseHeadBytes bounds an HTTP/1.1 response head
	// (common_http_protocol_options.max_response_headers_kb, which the
	// API keeps above 0); 0 when unset.
	maxResponseHeadBytes int
	// autoSNI derives the upstream handshake's server name and the SAN
	// its certificate must have from each request's host
	// (upstream_http_protocol_options); nil when neither auto_sni nor
	// auto_san_validation is set.
	autoSNI *upstream.AutoSNI
	// routePolicies are the route policies the options carry
	// (retry_policy, hash_policy, request_mirror_policies), which replace
	// the route's; nil when they carry none.
	routePolicies *router.ClusterPolicies
}

// defaultMaxResponseHeadersKB is Envoy's limit of an HTTP/1 response head
// when max_response_headers_kb is unset (other codecs default to 60).
const defaultMaxResponseHeadersKB = 80

// buildProtocol reads the HTTP protocol options: typed_extension_protocol_options
// with the HttpProtocolOptions extension (explicit_http_config choosing
// HTTP/1.1 or HTTP/2, common_http_protocol_options for idle_timeout,
// max_requests_per_connection and max_stream_duration), or else the
// deprecated cluster-level fields that say the same (http_protocol_options,
// http2_protocol_options, common_http_protocol_options,
// upstream_http_protocol_options, protocol_selection), as Envoy reads them
// when the extension is absent. Errors are relative to the cluster.
func buildProtocol(c *clusterv3.Cluster, reg *extension.Registry) (protocolSettings, []error) {
	// HTTP/2's flood limits have defaults whatever the protocol.
	ps := protocolSettings{idleTimeout: defaultIdleTimeout, h2: readH2Limits(nil)}
	var errs []error
	typed := 0
	for _, key := range sortedKeys(c.GetTypedExtensionProtocolOptions()) {
		path := `typed_extension_protocol_options["` + key + `"]`
		if !httpOptionsKeys[key] {
			errs = append(errs, configErrorf(path, "unknown protocol options %q (supported: envoy.extensions.upstreams.http.v3.HttpProtocolOptions)", key))
			continue
		}
		var opts httpv3.HttpProtocolOptions
		a := c.GetTypedExtensionProtocolOptions()[key]
		if !a.MessageIs(&opts) {
			errs = append(errs, configErrorf(path, "has type %s, expected envoy.extensions.upstreams.http.v3.HttpProtocolOptions", a.MessageName()))
			continue
		}
		if err := a.UnmarshalTo(&opts); err != nil {
			errs = append(errs, configErrorf(path, "decode: %v", err))
			continue
		}
		typed++
		// Envoy ignores the deprecated fields beside the extension;
		// Outrigger refuses them rather than leave them unread.
		for _, field := range legacyHTTPFields(c) {
			errs = append(errs, configErrorf(field, "cannot be combined with %s; set the protocol there", path))
		}
		errs = append(errs, ps.readHTTPOptions(&opts, path, reg)...)
	}
	if typed == 0 && len(legacyHTTPFields(c)) > 0 {
		opts, err := legacyHTTPOptions(c)
		if err != nil {
			return ps, append(errs, err)
		}
		for _, err := range ps.readHTTPOptions(opts, legacyPath, reg) {
			errs = append(errs, legacyError(err))
		}
	}
	return ps, errs
}

// readHTTPOptions reads one HttpProtocolOptions found at path.
func (ps *protocolSettings) readHTTPOptions(opts *httpv3.HttpProtocolOptions, path string, reg *extension.Registry) []error {
	var errs []error
	explicit := opts.GetExplicitHttpConfig()
	switch ud, auto := opts.GetUseDownstreamProtocolConfig(), opts.GetAutoConfig(); {
	case ud != nil:
		ps.downstream, ps.http2 = true, false
		ps.h2 = readH2Limits(ud.GetHttp2ProtocolOptions())
		errs = append(errs, ps.readHTTP1(ud.GetHttpProtocolOptions(), path+".use_downstream_protocol_config.http_protocol_options")...)
		ps.enableTrailers = ud.GetHttpProtocolOptions().GetEnableTrailers()
	case auto != nil:
		ps.auto, ps.http2 = true, false
		ps.h2 = readH2Limits(auto.GetHttp2ProtocolOptions())
		errs = append(errs, ps.readHTTP1(auto.GetHttpProtocolOptions(), path+".auto_config.http_protocol_options")...)
		ps.enableTrailers = auto.GetHttpProtocolOptions().GetEnableTrailers()
	case explicit == nil:
		errs = append(errs, configErrorf(path, "explicit_http_config, use_downstream_protocol_config or auto_config is required"))
	case explicit.GetHttp2ProtocolOptions() != nil:
		ps.http2 = true
		ps.h2 = readH2Limits(explicit.GetHttp2ProtocolOptions())
	case explicit.GetHttpProtocolOptions() != nil:
		ps.http2 = false
		errs = append(errs, ps.readHTTP1(explicit.GetHttpProtocolOptions(), path+".explicit_http_config.http_protocol_options")...)
		ps.enableTrailers = explicit.GetHttpProtocolOptions().GetEnableTrailers()
	default:
		errs = append(errs, configErrorf(path+".explicit_http_config", "http_protocol_options or http2_protocol_options is required (HTTP/3 is not supported by Outrigger)"))
	}
	errs = append(errs, downstreamOnlyFields(opts, path)...)
	if f := opts.GetHttpFilters(); len(f) > 0 {
		// The cluster's upstream filter chain; its filters need no
		// more of the server than the registry.
		chain, err := httpfilter.CompileUpstream("http_filters", f, httpfilter.Context{Extensions: reg, LookupByName: true, Now: time.Now})
		if err != nil {
			errs = append(errs, fieldErrors(path+".", err)...)
		}
		ps.upstreamFilters = chain
	}
	errs = append(errs, ps.readUpstreamHTTP(opts.GetUpstreamHttpProtocolOptions(), path+".upstream_http_protocol_options")...)
	if rp, err := router.CompileClusterPolicies(opts); err != nil {
		errs = append(errs, fieldErrors(path+".", err)...)
	} else {
		ps.routePolicies = rp
	}
	common := opts.GetCommonHttpProtocolOptions()
	if t := common.GetIdleTimeout(); t != nil {
		// Validation guarantees a valid duration; 0 disables the
		// timeout, as in Envoy.
		ps.idleTimeout = t.AsDuration()
	}
	if v := common.GetMaxResponseHeadersKb(); v != nil {
		// Only HTTP/1.1 response heads are bounded by it so far.
		if ps.http2 || ps.downstream || ps.auto {
			errs = append(errs, configErrorf(path+".common_http_protocol_options.max_response_headers_kb", "not supported by Outrigger on HTTP/2 upstreams (only HTTP/1.1 response heads are bounded by it)"))
		}
		ps.maxResponseHeadBytes = int(v.GetValue()) << 10
	}
	ps.maxRequestsPerConn = orDefault(common.GetMaxRequestsPerConnection(), 0)
	if ps.maxRequestsPerConn != 0 && (ps.http2 || ps.downstream || ps.auto) {
		errs = append(errs, configErrorf(path+".common_http_protocol_options.max_requests_per_connection", "%s", errH2MaxRequests))
	}
	if t := common.GetMaxStreamDuration(); t != nil {
		// 0 is no limit, as in Envoy.
		if d := t.AsDuration(); t.CheckValid() != nil || d < 0 {
			errs = append(errs, configErrorf(path+".common_http_protocol_options.max_stream_duration", "must be a valid, non-negative duration"))
		} else {
			ps.maxStreamDuration = d
		}
	}
	return errs
}

// readHTTP1 reads the HTTP/1.1 options, found at path, that shape the
// requests written upstream and what is kept of their responses.
func (ps *protocolSettings) readHTTP1(h1 *corev3.Http1ProtocolOptions, path string) []error {
	ps.h1Format.FullyQualifiedURL = h1.GetSendFullyQualifiedUrl()
	if err := ps.h1Format.ReadHeaderKeyFormat(h1.GetHeaderKeyFormat()); err != nil {
		return []error{prefixed(path+".header_key_format", err)}
	}
	return nil
}

// downstreamOnlyFields refuses the protocol option fields that Outrigger
// implements for clients only: the messages are shared with the HTTP
// connection manager, whose support the validator checks by field, so
// without this they would be accepted on a cluster and do nothing there.
func downstreamOnlyFields(opts *httpv3.HttpProtocolOptions, path string) []error {
	var errs []error
	refuse := func(set bool, field string) {
		if set {
			errs = append(errs, configErrorf(path+"."+field, "not supported by Outrigger on a cluster (it applies to client connections only)"))
		}
	}
	common := opts.GetCommonHttpProtocolOptions()
	refuse(common.GetMaxHeadersCount() != nil, "common_http_protocol_options.max_headers_count")
	refuse(common.GetHeadersWithUnderscoresAction() != corev3.HttpProtocolOptions_ALLOW, "common_http_protocol_options.headers_with_underscores_action")
	refuse(common.GetMaxConnectionDuration() != nil, "common_http_protocol_options.max_connection_duration")
	refuse(common.GetMaxConnectionDurationJitter() != nil, "common_http_protocol_options.max_connection_duration_jitter")
	config, h1, h2 := "explicit_http_config", opts.GetExplicitHttpConfig().GetHttpProtocolOptions(), opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions()
	if ud := opts.GetUseDownstreamProtocolConfig(); ud != nil {
		config, h1, h2 = "use_downstream_protocol_config", ud.GetHttpProtocolOptions(), ud.GetHttp2ProtocolOptions()
	}
	if ac := opts.GetAutoConfig(); ac != nil {
		config, h1, h2 = "auto_config", ac.GetHttpProtocolOptions(), ac.GetHttp2ProtocolOptions()
	}
	refuse(h1.GetAcceptHttp_10(), config+".http_protocol_options.accept_http_10")
	refuse(h1.GetDefaultHostForHttp_10() != "", config+".http_protocol_options.default_host_for_http_10")
	refuse(h1.GetAllowChunkedLength(), config+".http_protocol_options.allow_chunked_length")
	refuse(h1.GetOverrideStreamErrorOnInvalidHttpMessage() != nil, config+".http_protocol_options.override_stream_error_on_invalid_http_message")
	refuse(h1.GetAllowAbsoluteUrl() != nil, config+".http_protocol_options.allow_absolute_url")
	refuse(h1.GetAllowCustomMethods(), config+".http_protocol_options.allow_custom_methods")
	refuse(len(h1.GetIgnoreHttp_11Upgrade()) > 0, config+".http_protocol_options.ignore_http_11_upgrade")
	errs = append(errs, downstreamOnlyHTTP2Fields(h2, path+"."+config+".http2_protocol_options")...)
	return errs
}

// downstreamOnlyHTTP2Fields refuses the HTTP/2 settings Outrigger applies
// to client connections only (see downstreamOnlyFields): the upstream
// HTTP/2 transport answers a malformed response with a stream reset
// whatever the setting. Its flood limits, stream limit and windows apply
// to upstreams too (h2guard.go, h2streams.go).
func downstreamOnlyHTTP2Fields(h2 *corev3.Http2ProtocolOptions, path string) []error {
	var errs []error
	for field, set := range map[string]bool{
		//lint:ignore SA1019 the deprecated field must be refused here like the others
		"stream_error_on_invalid_http_messaging":        h2.GetStreamErrorOnInvalidHttpMessaging(),
		"override_stream_error_on_invalid_http_message": h2.GetOverrideStreamErrorOnInvalidHttpMessage() != nil,
		// Upgrades to HTTP/2 upstreams (extended CONNECT) are not
		// carried; the listener's allow_connect is.
		"allow_connect": h2.GetAllowConnect(),
		// The upstream transport (Go's) always Huffman-codes when
		// shorter, bounds header fields by the response head limit
		// only, and sends no SETTINGS of the configuration's choosing.
		"enable_huffman_encoding":    h2.GetEnableHuffmanEncoding() != nil,
		"max_header_field_size_kb":   h2.GetMaxHeaderFieldSizeKb() != nil,
		"custom_settings_parameters": len(h2.GetCustomSettingsParameters()) > 0,
		"disallow_obs_text":          h2.GetDisallowObsText().GetValue(),
	} {
		if set {
			errs = append(errs, configErrorf(path+"."+field, "not supported by Outrigger on a cluster (it applies to client connections only)"))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	if v := h2.GetHpackTableSize(); v != nil && (v.GetValue() == 0 || v.GetValue() >= maxUpstreamHPACKTable) {
		// Go's transport takes 0 for its default and caps the table
		// below 4 MiB.
		errs = append(errs, configErrorf(path+".hpack_table_size", "not supported by Outrigger on a cluster outside 1 to %d", maxUpstreamHPACKTable-1))
	}
	if h2.GetConnectionKeepalive().GetIntervalJitter() != nil {
		// The upstream transport pings after an interval without a frame
		// from the server, with no jitter.
		errs = append(errs, configErrorf(path+".connection_keepalive.interval_jitter", "not supported by Outrigger on a cluster (upstream keepalive PINGs have no jitter)"))
	}
	return errs
}

// maxUpstreamHPACKTable is the first table size the upstream HTTP/2
// transport does not take (net/http.HTTP2Config).
const maxUpstreamHPACKTable = 4 << 20

// errAutoSNIHTTP2 refuses auto_sni and auto_san_validation where the
// protocol is chosen per request or by ALPN: their pools are not kept per
// server name (explicit HTTP/1.1 and HTTP/2 clusters are).
const errAutoSNIHTTP2 = "not supported by Outrigger with use_downstream_protocol_config or auto_config (explicit_http_config only)"

// readUpstreamHTTP reads upstream_http_protocol_options: auto_sni,
// auto_san_validation and override_auto_sni_header, for clusters of one
// protocol (see errAutoSNIHTTP2). path names the message.
func (ps *protocolSettings) readUpstreamHTTP(u *corev3.UpstreamHttpProtocolOptions, path string) []error {
	if u == nil {
		return nil
	}
	var errs []error
	if (u.GetAutoSni() || u.GetAutoSanValidation()) && (ps.downstream || ps.auto) {
		field := "auto_sni"
		if !u.GetAutoSni() {
			field = "auto_san_validation"
		}
		errs = append(errs, configErrorf(path+"."+field, "%s", errAutoSNIHTTP2))
	}
	if u.GetAutoSni() || u.GetAutoSanValidation() {
		ps.autoSNI = &upstream.AutoSNI{SNI: u.GetAutoSni(), SAN: u.GetAutoSanValidation(), Header: strings.ToLower(u.GetOverrideAutoSniHeader())}
	}
	return errs
}
