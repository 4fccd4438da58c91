package als

import (
	"net"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// common fills the properties every entry has.
func (s *sink) common(e *accesslog.Entry) *datav3.AccessLogCommon {
	c := &datav3.AccessLogCommon{
		DownstreamRemoteAddress:          socketAddress(e.DownstreamRemoteAddress),
		DownstreamLocalAddress:           socketAddress(e.DownstreamLocalAddress),
		UpstreamRemoteAddress:            socketAddress(e.UpstreamHost),
		UpstreamLocalAddress:             socketAddress(e.UpstreamLocalAddress),
		UpstreamCluster:                  own(e.UpstreamCluster),
		UpstreamTransportFailureReason:   own(e.UpstreamTransportFailureReason),
		DownstreamTransportFailureReason: own(e.DownstreamTransportFailureReason),
		RouteName:                        own(e.RouteName),
		ResponseFlags:                    responseFlags(e.ResponseFlags),
		AccessLogType:                    e.Type,
		Metadata:                         e.DynamicMetadata,
	}
	if !e.StartTime.IsZero() {
		c.StartTime = timestamppb.New(e.StartTime)
		c.TimeToLastRxByte = since(e.StartTime, e.LastRequestByte)
		c.TimeToFirstUpstreamRxByte = since(e.StartTime, e.FirstUpstreamByte)
	}
	if e.Duration > 0 {
		c.TimeToLastDownstreamTxByte = durationpb.New(e.Duration)
		c.Duration = durationpb.New(e.Duration)
	}
	for i := range s.tags {
		if v, ok := s.tags[i].Value(e); ok {
			if c.CustomTags == nil {
				c.CustomTags = map[string]string{}
			}
			c.CustomTags[s.tags[i].Tag] = own(v)
		}
	}
	return c
}

// since is t's offset from start, nil when t is unknown.
func since(start, t time.Time) *durationpb.Duration {
	if t.IsZero() || t.Before(start) {
		return nil
	}
	return durationpb.New(t.Sub(start))
}

// socketAddress parses an "ip:port" entry value; nil when empty.
func socketAddress(hostPort string) *corev3.Address {
	if hostPort == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil
	}
	p, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		return nil
	}
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: own(host), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)},
	}}}
}

// responseFlags spells the flags as the data API's booleans.
func responseFlags(f accesslog.ResponseFlags) *datav3.ResponseFlags {
	if f == 0 {
		return nil
	}
	r := &datav3.ResponseFlags{
		FailedLocalHealthcheck:           f&accesslog.FailedLocalHealthCheck != 0,
		NoHealthyUpstream:                f&accesslog.NoHealthyUpstream != 0,
		UpstreamRequestTimeout:           f&accesslog.UpstreamRequestTimeout != 0,
		LocalReset:                       f&accesslog.LocalReset != 0,
		UpstreamRemoteReset:              f&accesslog.UpstreamRemoteReset != 0,
		UpstreamConnectionFailure:        f&accesslog.UpstreamConnectionFailure != 0,
		UpstreamConnectionTermination:    f&accesslog.UpstreamConnectionTermination != 0,
		UpstreamOverflow:                 f&accesslog.UpstreamOverflow != 0,
		NoRouteFound:                     f&accesslog.NoRouteFound != 0,
		DelayInjected:                    f&accesslog.DelayInjected != 0,
		FaultInjected:                    f&accesslog.FaultInjected != 0,
		RateLimited:                      f&accesslog.RateLimited != 0,
		RateLimitServiceError:            f&accesslog.RateLimitServiceError != 0,
		DownstreamConnectionTermination:  f&accesslog.DownstreamConnectionTermination != 0,
		UpstreamRetryLimitExceeded:       f&accesslog.UpstreamRetryLimitExceeded != 0,
		StreamIdleTimeout:                f&accesslog.StreamIdleTimeout != 0,
		InvalidEnvoyRequestHeaders:       f&accesslog.InvalidEnvoyRequestHeaders != 0,
		DownstreamProtocolError:          f&accesslog.DownstreamProtocolError != 0,
		UpstreamMaxStreamDurationReached: f&accesslog.UpstreamMaxStreamDurationReached != 0,
		ResponseFromCacheFilter:          f&accesslog.ResponseFromCacheFilter != 0,
		NoFilterConfigFound:              f&accesslog.NoFilterConfigFound != 0,
		DurationTimeout:                  f&accesslog.DurationTimeout != 0,
		UpstreamProtocolError:            f&accesslog.UpstreamProtocolError != 0,
		NoClusterFound:                   f&accesslog.NoClusterFound != 0,
		OverloadManager:                  f&accesslog.OverloadManager != 0,
		DnsResolutionFailure:             f&accesslog.DNSResolutionFailed != 0,
		DownstreamRemoteReset:            f&accesslog.DownstreamRemoteReset != 0,
	}
	if f&accesslog.UnauthorizedExternalService != 0 {
		r.UnauthorizedDetails = &datav3.ResponseFlags_Unauthorized{Reason: datav3.ResponseFlags_Unauthorized_EXTERNAL_SERVICE}
	}
	return r
}

// httpEntry is e as the HTTP log of the access log service.
func (s *sink) httpEntry(e *accesslog.Entry) *datav3.HTTPAccessLogEntry {
	h := &datav3.HTTPAccessLogEntry{
		CommonProperties: s.common(e),
		ProtocolVersion:  protocolVersion(e.Protocol),
		Request: &datav3.HTTPRequestProperties{
			RequestMethod:    requestMethod(e.Method),
			Scheme:           own(e.Scheme),
			Authority:        own(e.Authority),
			Path:             own(e.Path),
			RequestBodyBytes: e.BytesReceived,
		},
		Response: &datav3.HTTPResponseProperties{
			ResponseBodyBytes:   e.BytesSent,
			ResponseCodeDetails: own(e.ResponseCodeDetails),
		},
	}
	if e.ResponseCode != 0 {
		h.Response.ResponseCode = wrapperspb.UInt32(uint32(e.ResponseCode))
	}
	if rh := e.RequestHeaders; rh != nil {
		r := h.Request
		r.UserAgent = header(rh, "user-agent")
		r.Referer = header(rh, "referer")
		r.ForwardedFor = header(rh, "x-forwarded-for")
		r.RequestId = header(rh, "x-request-id")
		r.OriginalPath = header(rh, "x-envoy-original-path")
		r.RequestHeaders = pick(rh, s.requestHeaders)
	}
	if e.ResponseHeaders != nil {
		h.Response.ResponseHeaders = pick(e.ResponseHeaders, s.responseHeaders)
	}
	if e.ResponseTrailers != nil {
		h.Response.ResponseTrailers = pick(e.ResponseTrailers, s.responseTrailers)
	}
	return h
}

// tcpEntry is e as the TCP log of the access log service.
func (s *sink) tcpEntry(e *accesslog.Entry) *datav3.TCPAccessLogEntry {
	return &datav3.TCPAccessLogEntry{
		CommonProperties: s.common(e),
		ConnectionProperties: &datav3.ConnectionProperties{
			ReceivedBytes: e.BytesReceived,
			SentBytes:     e.BytesSent,
		},
	}
}

// own copies a string of the entry. An entry's strings may share memory
// the connection reuses for its next request once Log returns (the codecs
// do not copy what they parse), and a batch outlives that.
func own(v string) string { return strings.Clone(v) }

// header is a copy of the named header's value, "" when absent.
func header(h accesslog.HeaderGetter, name string) string {
	v, _ := h.Get(name)
	return own(v)
}

// pick copies the named headers that are present; nil when none is.
func pick(h accesslog.HeaderGetter, names []string) map[string]string {
	var out map[string]string
	for _, n := range names {
		if v, ok := h.Get(n); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[n] = own(v)
		}
	}
	return out
}

// protocolVersion spells %PROTOCOL% as the data API's enum.
func protocolVersion(p string) datav3.HTTPAccessLogEntry_HTTPVersion {
	switch p {
	case "HTTP/1.0":
		return datav3.HTTPAccessLogEntry_HTTP10
	case "HTTP/1.1":
		return datav3.HTTPAccessLogEntry_HTTP11
	case "HTTP/2":
		return datav3.HTTPAccessLogEntry_HTTP2
	case "HTTP/3":
		return datav3.HTTPAccessLogEntry_HTTP3
	}
	return datav3.HTTPAccessLogEntry_PROTOCOL_UNSPECIFIED
}

// requestMethod spells a method as the core API's enum; methods it does
// not name are METHOD_UNSPECIFIED.
func requestMethod(m string) corev3.RequestMethod {
	if v, ok := corev3.RequestMethod_value[strings.ToUpper(m)]; ok && m != "" {
		return corev3.RequestMethod(v)
	}
	return corev3.RequestMethod_METHOD_UNSPECIFIED
}
