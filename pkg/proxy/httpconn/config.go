package httpconn

import (
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/earlyheadermutation"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// ServerName is the default value of the server response header.
const ServerName = "outrigger"

// Envoy's defaults for what the configuration leaves unset.
const (
	defaultStreamIdleTimeout   = 5 * time.Minute
	defaultIdleTimeout         = time.Hour
	defaultDelayedCloseTimeout = time.Second
	defaultDrainTimeout        = 5 * time.Second
	defaultMaxRequestHeadersKB = 60
	defaultMaxHeadersCount     = 100
	// maxTrailerBytes bounds the trailer section of a chunked body, which
	// is read and dropped (Envoy drops HTTP/1 trailers unless told not
	// to).
	maxTrailerBytes = 60 << 10
)

// settings are the connection manager's configuration, read once by New.
type settings struct {
	statPrefix string
	codec      hcmv3.HttpConnectionManager_CodecType

	serverName      string
	serverTransform hcmv3.HttpConnectionManager_ServerHeaderTransformation
	via             string
	// schemeToSet is scheme_header_transformation.scheme_to_overwrite:
	// the request's scheme and x-forwarded-proto, "" to keep them.
	// match_upstream needs nothing: the :scheme sent to an upstream is
	// always its transport's (see docs/compat.md).
	schemeToSet string
	// schemeMatchUpstream is match_upstream: the scheme of an
	// absolute-form target sent upstream (send_fully_qualified_url) is
	// the cluster transport's.
	schemeMatchUpstream bool

	useRemoteAddress  bool
	skipXFFAppend     bool
	xffTrustedHops    uint32
	generateRequestID bool
	// requestIDInResponse is always_set_request_id_in_response.
	requestIDInResponse bool
	// ipDetection is original_ip_detection_extensions, asked in order
	// for the client's address when use_remote_address is off.
	ipDetection []ipdetection.Detector
	// earlyMutations are early_header_mutation_extensions, run in order
	// on every request's headers before anything else reads them.
	earlyMutations []earlyheadermutation.Mutation
	// requestID is what request_id_extension changes in the tracing
	// decision (pack_trace_reason, use_request_id_for_trace_sampling).
	requestID requestid.Behaviour
	// preserveExternalRequestID keeps an edge request's x-request-id.
	preserveExternalRequestID bool
	// internal are the client addresses whose requests are internal
	// (internal_address_config).
	internal internalAddresses

	// The path and host normalisations (see pathnorm.go): the escaped
	// slashes action (IMPLEMENTATION_SPECIFIC_DEFAULT reads the runtime),
	// normalize_path (nil reads the runtime), merge_slashes, and the
	// port stripped from the host.
	escapedSlashes hcmv3.HttpConnectionManager_PathWithEscapedSlashesAction
	normalizePath  *bool
	mergeSlashes   bool
	stripPort      stripPortMode
	// stripTrailingHostDot removes the host's trailing dot
	// (strip_trailing_host_dot).
	stripTrailingHostDot bool
	// addUserAgent names this proxy to the upstream in
	// x-envoy-downstream-service-cluster and -node (add_user_agent);
	// appendXForwardedPort sets x-forwarded-port (append_x_forwarded_port).
	addUserAgent, appendXForwardedPort bool
	// xfcc is forward_client_cert_details, xfccDetails what
	// set_current_client_cert_details adds (see xfcc.go).
	xfcc        hcmv3.HttpConnectionManager_ForwardClientCertDetails
	xfccDetails []xfccDetail
	// xfccMatcher is forward_client_cert_matcher, which chooses both per
	// request (see xfcc_matcher.go); nil without one.
	xfccMatcher *httpmatch.Matcher[*xfccChoice]
	// proxy100Continue sends Expect: 100-continue to HTTP/1 upstreams and
	// relays their 100 Continue (proxy_100_continue), instead of the
	// proxy answering it.
	proxy100Continue bool
	// appendLocalOverload adds x-envoy-local-overloaded: true to the 503
	// the overload manager's stop_accepting_requests answers with
	// (append_local_overload).
	appendLocalOverload bool
	// addProxyProtocolState is add_proxy_protocol_connection_state
	// (default true): see Manager.proxyProtocolState.
	addProxyProtocolState bool
	// forwardProto is forward_proto_config, nil without it.
	forwardProto *forwardProto

	// Timeouts; 0 disables one.
	idleTimeout       time.Duration
	streamIdleTimeout time.Duration
	// streamFlushTimeout is stream_flush_timeout when set
	// (streamFlushTimeoutSet); see stream.flushTimeout.
	streamFlushTimeout    time.Duration
	streamFlushTimeoutSet bool
	requestTimeout        time.Duration
	requestHeadersTimeout time.Duration
	// maxConnectionDuration ends a connection that long after its accept
	// (common_http_protocol_options.max_connection_duration).
	maxConnectionDuration time.Duration
	// maxConnectionDurationJitter and drainTimeoutJitter are the
	// percentages of max_connection_duration_jitter and
	// drain_timeout_jitter (0 for none).
	maxConnectionDurationJitter, drainTimeoutJitter float64
	// http1SafeMaxDuration is http1_safe_max_connection_duration: an
	// HTTP/1 connection past its maximum duration waits for its next
	// request and answers it with connection: close, rather than being
	// closed while idle.
	http1SafeMaxDuration bool
	// maxStreamDuration ends a stream that long after its start
	// (common_http_protocol_options.max_stream_duration); a route's
	// max_stream_duration overrides it (see refreshDuration).
	maxStreamDuration time.Duration
	// delayedCloseTimeout is how long a connection the proxy ends after
	// a response waits for the client to close it first.
	delayedCloseTimeout time.Duration
	// drainTimeout is the time between an HTTP/2 connection's two
	// GOAWAYs when it drains (see h2Conn.startDrainLocked).
	drainTimeout time.Duration

	maxRequestHeadersBytes int
	maxHeadersCount        int
	// underscores is common_http_protocol_options
	// headers_with_underscores_action.
	underscores              corev3.HttpProtocolOptions_HeadersWithUnderscoresAction
	maxRequestsPerConnection uint32

	acceptHTTP10      bool
	defaultHostHTTP10 string
	// properCase writes HTTP/1 field names in proper case
	// (http_protocol_options.header_key_format.proper_case_words).
	properCase bool
	// keyFormat is http_protocol_options.header_key_format whole: with
	// the preserve_case stateful formatter, requests' field names keep
	// their spelling (preserve_case.go).
	keyFormat upstream.HTTP1Format
	// keepAbsoluteURL is allow_absolute_url: false: an absolute-form
	// target stays the path (refused with a 404, absolute_path_rejected)
	// rather than giving the request its host and path.
	keepAbsoluteURL bool
	// h1StreamErrorOnInvalid keeps an HTTP/1 connection open after a
	// 400 local reply: http_protocol_options
	// override_stream_error_on_invalid_http_message, else the connection
	// manager's stream_error_on_invalid_http_message (false).
	h1StreamErrorOnInvalid bool
	// allowChunkedLength accepts requests with both Content-Length and
	// chunked Transfer-Encoding, dropping the length (allow_chunked_length).
	allowChunkedLength bool
	// enableTrailers carries HTTP/1 trailers (http_protocol_options
	// enable_trailers): a chunked request's trailers go upstream and
	// response trailers end a chunked response; without it both are
	// dropped, as in Envoy.
	enableTrailers bool

	// h2 are the HTTP/2 server's settings and limits
	// (http2_protocol_options).
	h2 h2Settings

	// upgrades are upgrade_configs (see readUpgrades).
	upgrades map[string]bool
	// ignoreUpgrade are http_protocol_options.ignore_http_11_upgrade
	// (see readIgnoreUpgrade), nil without any.
	ignoreUpgrade router.ListStringMatch

	// logOpts are access_log_options (see readLogOptions).
	logOpts logOptions
}

// stripPortMode is which port strip_matching_host_port or
// strip_any_host_port removes from the host.
type stripPortMode uint8

// The zero stripPortMode keeps the port.
const (
	// stripMatchingPort removes the port when it is the listener's.
	stripMatchingPort stripPortMode = iota + 1
	stripAnyPort
)

// readSettings reads the connection manager's own fields. Errors name the
// field path below the http_connection_manager.
func readSettings(cfg *hcmv3.HttpConnectionManager) (settings, error) {
	s := settings{
		statPrefix:             cfg.GetStatPrefix(),
		codec:                  cfg.GetCodecType(),
		serverName:             cfg.GetServerName(),
		serverTransform:        cfg.GetServerHeaderTransformation(),
		via:                    cfg.GetVia(),
		schemeToSet:            cfg.GetSchemeHeaderTransformation().GetSchemeToOverwrite(),
		schemeMatchUpstream:    cfg.GetSchemeHeaderTransformation().GetMatchUpstream(),
		useRemoteAddress:       cfg.GetUseRemoteAddress().GetValue(),
		skipXFFAppend:          cfg.GetSkipXffAppend(),
		xffTrustedHops:         cfg.GetXffNumTrustedHops(),
		generateRequestID:      true,
		requestIDInResponse:    cfg.GetAlwaysSetRequestIdInResponse(),
		escapedSlashes:         cfg.GetPathWithEscapedSlashesAction(),
		mergeSlashes:           cfg.GetMergeSlashes(),
		streamIdleTimeout:      defaultStreamIdleTimeout,
		idleTimeout:            defaultIdleTimeout,
		delayedCloseTimeout:    defaultDelayedCloseTimeout,
		drainTimeout:           defaultDrainTimeout,
		maxRequestHeadersBytes: defaultMaxRequestHeadersKB << 10,
		maxHeadersCount:        defaultMaxHeadersCount,
		acceptHTTP10:           cfg.GetHttpProtocolOptions().GetAcceptHttp_10(),
		defaultHostHTTP10:      cfg.GetHttpProtocolOptions().GetDefaultHostForHttp_10(),
		properCase:             cfg.GetHttpProtocolOptions().GetHeaderKeyFormat().GetProperCaseWords() != nil,
		allowChunkedLength:     cfg.GetHttpProtocolOptions().GetAllowChunkedLength(),
		enableTrailers:         cfg.GetHttpProtocolOptions().GetEnableTrailers(),
		keepAbsoluteURL:        cfg.GetHttpProtocolOptions().GetAllowAbsoluteUrl() != nil && !cfg.GetHttpProtocolOptions().GetAllowAbsoluteUrl().GetValue(),
		h1StreamErrorOnInvalid: cfg.GetStreamErrorOnInvalidHttpMessage().GetValue(),
	}
	if v := cfg.GetHttpProtocolOptions().GetOverrideStreamErrorOnInvalidHttpMessage(); v != nil {
		s.h1StreamErrorOnInvalid = v.GetValue()
	}
	s.h2 = readH2Settings(cfg)
	var logErr error
	if s.logOpts, logErr = readLogOptions(cfg); logErr != nil {
		return s, logErr
	}
	var upgradeErr error
	if s.upgrades, upgradeErr = readUpgrades(cfg.GetUpgradeConfigs()); upgradeErr != nil {
		return s, upgradeErr
	}
	if s.ignoreUpgrade, upgradeErr = readIgnoreUpgrade(cfg.GetHttpProtocolOptions()); upgradeErr != nil {
		return s, upgradeErr
	}
	if err := s.keyFormat.ReadHeaderKeyFormat(cfg.GetHttpProtocolOptions().GetHeaderKeyFormat()); err != nil {
		return s, fmt.Errorf("http_protocol_options.header_key_format.%w", err)
	}
	switch s.codec {
	case hcmv3.HttpConnectionManager_AUTO, hcmv3.HttpConnectionManager_HTTP1, hcmv3.HttpConnectionManager_HTTP2:
	default:
		return s, fmt.Errorf("codec_type: %v is not supported by Outrigger", s.codec)
	}
	if s.serverName == "" {
		s.serverName = ServerName
	}
	s.preserveExternalRequestID = cfg.GetPreserveExternalRequestId()
	var err error
	if s.internal, err = readInternalAddresses(cfg.GetInternalAddressConfig()); err != nil {
		return s, fmt.Errorf("internal_address_config.%w", err)
	}
	if v := cfg.GetNormalizePath(); v != nil {
		b := v.GetValue()
		s.normalizePath = &b
	}
	switch {
	case cfg.GetStripMatchingHostPort() && cfg.GetStripAnyHostPort():
		return s, errors.New("strip_any_host_port: only one of strip_matching_host_port or strip_any_host_port can be set")
	case cfg.GetStripMatchingHostPort():
		s.stripPort = stripMatchingPort
	case cfg.GetStripAnyHostPort():
		s.stripPort = stripAnyPort
	}
	s.stripTrailingHostDot = cfg.GetStripTrailingHostDot()
	s.addUserAgent = cfg.GetAddUserAgent().GetValue()
	s.appendXForwardedPort = cfg.GetAppendXForwardedPort()
	s.proxy100Continue = cfg.GetProxy_100Continue()
	s.appendLocalOverload = cfg.GetAppendLocalOverload()
	s.forwardProto = readForwardProto(cfg.GetForwardProtoConfig())
	s.addProxyProtocolState = cfg.GetAddProxyProtocolConnectionState() == nil || cfg.GetAddProxyProtocolConnectionState().GetValue()
	s.xfcc, s.xfccDetails = cfg.GetForwardClientCertDetails(), readXFCCDetails(cfg.GetSetCurrentClientCertDetails())
	if m := cfg.GetForwardClientCertMatcher(); m != nil {
		t, err := readXFCCMatcher(m)
		if err != nil {
			return s, fmt.Errorf("forward_client_cert_matcher.%w", err)
		}
		s.xfccMatcher = t
	}
	if v := cfg.GetGenerateRequestId(); v != nil {
		s.generateRequestID = v.GetValue()
	}
	if v := cfg.GetMaxRequestHeadersKb(); v != nil {
		s.maxRequestHeadersBytes = int(v.GetValue()) << 10
	}
	if err := validateCustomSettings(cfg.GetHttp2ProtocolOptions()); err != nil {
		return s, fmt.Errorf("http2_protocol_options.%w", err)
	}
	if s.h2.maxFieldWireBytes > s.maxRequestHeadersBytes {
		// A field cannot be larger than all the fields together.
		return s, fmt.Errorf("http2_protocol_options.max_header_field_size_kb: %d exceeds max_request_headers_kb (%d)", s.h2.maxFieldWireBytes>>10, s.maxRequestHeadersBytes>>10)
	}
	if s.defaultHostHTTP10 != "" && !s.acceptHTTP10 {
		return s, errors.New("http_protocol_options.default_host_for_http_10: needs accept_http_10")
	}
	common := cfg.GetCommonHttpProtocolOptions()
	if common.GetMaxResponseHeadersKb() != nil {
		// Envoy documents it as valid on clusters only; the message is
		// shared, so the field is accepted by the support table.
		return s, errors.New("common_http_protocol_options.max_response_headers_kb: only valid on a cluster, not on the connection manager")
	}
	s.underscores = common.GetHeadersWithUnderscoresAction()
	if v := common.GetMaxHeadersCount(); v != nil {
		s.maxHeadersCount = int(v.GetValue())
	}
	if v := common.GetMaxRequestsPerConnection(); v != nil {
		s.maxRequestsPerConnection = v.GetValue()
	}
	durations := []struct {
		path string
		d    *durationpb.Duration
		dst  *time.Duration
	}{
		{"stream_idle_timeout", cfg.GetStreamIdleTimeout(), &s.streamIdleTimeout},
		{"stream_flush_timeout", cfg.GetStreamFlushTimeout(), &s.streamFlushTimeout},
		{"request_timeout", cfg.GetRequestTimeout(), &s.requestTimeout},
		{"request_headers_timeout", cfg.GetRequestHeadersTimeout(), &s.requestHeadersTimeout},
		{"common_http_protocol_options.idle_timeout", common.GetIdleTimeout(), &s.idleTimeout},
		{"common_http_protocol_options.max_connection_duration", common.GetMaxConnectionDuration(), &s.maxConnectionDuration},
		{"common_http_protocol_options.max_stream_duration", common.GetMaxStreamDuration(), &s.maxStreamDuration},
		{"delayed_close_timeout", cfg.GetDelayedCloseTimeout(), &s.delayedCloseTimeout},
		{"drain_timeout", cfg.GetDrainTimeout(), &s.drainTimeout},
	}
	for _, d := range durations {
		if d.d == nil {
			continue
		}
		if *d.dst, err = duration(d.d); err != nil {
			return s, fmt.Errorf("%s: %w", d.path, err)
		}
	}
	s.streamFlushTimeoutSet = cfg.GetStreamFlushTimeout() != nil
	// The jitters: a random share, up to the percentage, added to each
	// connection's maximum duration and drain grace period (jitter.go).
	s.maxConnectionDurationJitter = common.GetMaxConnectionDurationJitter().GetValue()
	s.drainTimeoutJitter = cfg.GetDrainTimeoutJitter().GetValue()
	s.http1SafeMaxDuration = cfg.GetHttp1SafeMaxConnectionDuration()
	if d := common.GetMaxConnectionDuration(); d != nil && s.maxConnectionDuration == 0 {
		// Envoy arms a timer of 0 and so closes every connection as
		// soon as it opens; no one means that.
		return s, errors.New("common_http_protocol_options.max_connection_duration: 0s would close every connection at once; leave it unset for no maximum")
	}
	return s, nil
}

// duration converts a configured duration; negative ones are refused (the
// API's own constraints already refuse most).
func duration(d *durationpb.Duration) (time.Duration, error) {
	if err := d.CheckValid(); err != nil {
		return 0, err
	}
	v := d.AsDuration()
	if v < 0 {
		return 0, fmt.Errorf("must not be negative, got %v", v)
	}
	return v, nil
}
