package httpconn

import (
	"strings"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// proxyStatus is proxy_status_config: the Proxy-Status response field of
// RFC 9209, added as Envoy's ProxyStatusUtils makes it to responses whose
// response flags name a proxy error.
type proxyStatus struct {
	// name starts the field: literal_proxy_name, the node's id
	// (use_node_id), or the server name.
	name                 string
	removeDetails        bool
	removeFlags          bool
	setRecommendedStatus bool
}

// readProxyStatus reads proxy_status_config, nil when unset; nodeID is the
// bootstrap node's id and serverName the server header's value.
func readProxyStatus(c *hcmv3.HttpConnectionManager_ProxyStatusConfig, nodeID, serverName string) *proxyStatus {
	if c == nil {
		return nil
	}
	p := &proxyStatus{
		name:                 serverName,
		removeDetails:        c.GetRemoveDetails(),
		removeFlags:          c.GetRemoveResponseFlags(),
		setRecommendedStatus: c.GetSetRecommendedResponseCode(),
	}
	// remove_connection_termination_details has nothing to remove:
	// connection termination details are set by network filters closing
	// a connection, never on an HTTP stream here.
	switch n := c.GetProxyName().(type) {
	case *hcmv3.HttpConnectionManager_ProxyStatusConfig_LiteralProxyName:
		p.name = n.LiteralProxyName
	case *hcmv3.HttpConnectionManager_ProxyStatusConfig_UseNodeId:
		if n.UseNodeId {
			p.name = nodeID
		}
	}
	return p
}

// proxyError is a proxy error type of RFC 9209 §2.3, with the status code
// it recommends (0: none).
type proxyError struct {
	name   string
	status int
}

// The proxy error types Envoy maps response flags to.
var (
	errDestinationUnavailable = proxyError{"destination_unavailable", 503}
	errDestinationNotFound    = proxyError{"destination_not_found", 500}
	errHTTPResponseTimeout    = proxyError{"http_response_timeout", 504}
	errConnectionTimeout      = proxyError{"connection_timeout", 504}
	errConnectionTerminated   = proxyError{"connection_terminated", 502}
	errConnectionRefused      = proxyError{"connection_refused", 502}
	errConnectionLimit        = proxyError{"connection_limit_reached", 503}
	errHTTPRequestError       = proxyError{"http_request_error", 0}
	errProxyConfiguration     = proxyError{"proxy_configuration_error", 500}
	errHTTPProtocol           = proxyError{"http_protocol_error", 502}
	errDNS                    = proxyError{"dns_error", 502}
)

// proxyErrorOrder is Envoy's ProxyStatusUtils::fromStreamInfo (with its
// runtime default, proxy_status_mapping_more_core_response_flags on): the
// first flag set, in this order, picks the error. Immutable.
var proxyErrorOrder = []struct {
	flag accesslog.ResponseFlags
	err  proxyError
}{
	{accesslog.FailedLocalHealthCheck, errDestinationUnavailable},
	{accesslog.NoHealthyUpstream, errDestinationUnavailable},
	{accesslog.UpstreamRequestTimeout, errHTTPResponseTimeout},
	{accesslog.DurationTimeout, errConnectionTimeout},
	{accesslog.LocalReset, errConnectionTimeout},
	{accesslog.UpstreamRemoteReset, errConnectionTerminated},
	{accesslog.UpstreamConnectionFailure, errConnectionRefused},
	{accesslog.UnauthorizedExternalService, errConnectionRefused},
	{accesslog.UpstreamConnectionTermination, errConnectionTerminated},
	{accesslog.OverloadManager, errConnectionLimit},
	{accesslog.DropOverload, errConnectionLimit},
	{accesslog.FaultInjected, errHTTPRequestError},
	{accesslog.DownstreamConnectionTermination, errConnectionTerminated},
	{accesslog.DownstreamRemoteReset, errConnectionTerminated},
	{accesslog.UpstreamOverflow, errConnectionLimit},
	{accesslog.NoRouteFound, errDestinationNotFound},
	{accesslog.RateLimited, errConnectionLimit},
	{accesslog.RateLimitServiceError, errConnectionLimit},
	{accesslog.UpstreamRetryLimitExceeded, errDestinationUnavailable},
	{accesslog.StreamIdleTimeout, errHTTPResponseTimeout},
	{accesslog.InvalidEnvoyRequestHeaders, errHTTPRequestError},
	{accesslog.DownstreamProtocolError, errHTTPRequestError},
	{accesslog.UpstreamMaxStreamDurationReached, errHTTPResponseTimeout},
	{accesslog.NoFilterConfigFound, errProxyConfiguration},
	{accesslog.UpstreamProtocolError, errHTTPProtocol},
	{accesslog.NoClusterFound, errDestinationUnavailable},
	{accesslog.DNSResolutionFailed, errDNS},
}

// proxyErrorOf is the proxy error flags name, false when none does.
func proxyErrorOf(flags accesslog.ResponseFlags) (proxyError, bool) {
	if flags == 0 {
		return proxyError{}, false
	}
	for _, e := range proxyErrorOrder {
		if flags&e.flag != 0 {
			return e.err, true
		}
	}
	return proxyError{}, false
}

// detailsEscaper escapes the details as Envoy's StringUtil::escape does.
// Immutable.
var detailsEscaper = strings.NewReplacer("\r", `\r`, "\n", `\n`, "\t", `\t`, `"`, `\"`, `\`, `\\`)

// value is the Proxy-Status field value for error e: the proxy's name,
// the error, and the details (the response code details, then the
// response flags' short codes), escaped as Envoy's StringUtil::escape.
func (p *proxyStatus) value(e proxyError, details string, flags accesslog.ResponseFlags) string {
	var b strings.Builder
	b.WriteString(p.name)
	b.WriteString("; error=")
	b.WriteString(e.name)
	if p.removeDetails || details == "" {
		return b.String()
	}
	d := details
	if !p.removeFlags && flags != 0 {
		d += "; " + flags.String()
	}
	b.WriteString(`; details="`)
	b.WriteString(detailsEscaper.Replace(d))
	b.WriteByte('"')
	return b.String()
}

// addProxyStatus appends the Proxy-Status field to the response head when
// proxy_status_config is set and the stream's flags name a proxy error,
// and sets the status the error recommends when
// set_recommended_response_code asks for it.
func (s *stream) addProxyStatus() {
	p := s.m.proxyStatus
	if p == nil {
		return
	}
	e, ok := proxyErrorOf(s.flags)
	if !ok {
		return
	}
	v := p.value(e, s.details, s.flags)
	if prev, ok := s.respHeaders.Get("proxy-status"); ok {
		// As Envoy's appendProxyStatus: one field, joined with ", ".
		s.respHeaders.Set("proxy-status", prev+", "+v)
	} else {
		s.respHeaders.Add("proxy-status", v)
	}
	if p.setRecommendedStatus && e.status != 0 {
		s.status = e.status
	}
}
