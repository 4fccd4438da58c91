package tcpproxy

import (
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tunnelhttp"
)

// logEntry logs the connection as it is now, for the reason t.
func (s *session) logEntry(t datav3.AccessLogType) {
	if s.p.logs.Empty() {
		return
	}
	if _, err := s.p.logs.Log(nil, s.entry(t)); err != nil {
		s.p.log.V(1).Info("access log", "error", err.Error())
	}
}

// ConnectionLogEntry describes the connection for its listener's access
// logs (netfilter.StreamInfo).
func (s *session) ConnectionLogEntry() *accesslog.Entry {
	return s.entry(datav3.AccessLogType_NotSet)
}

// entry describes the connection as it is now, for the reason t: for the
// access logs and the tunnel's header formats.
func (s *session) entry(t datav3.AccessLogType) *accesslog.Entry {
	e := &accesslog.Entry{
		StartTime:               s.start,
		Type:                    t,
		ResponseFlags:           accesslog.ResponseFlags(s.flags.Load()),
		BytesReceived:           s.rx.Load(),
		BytesSent:               s.tx.Load(),
		Duration:                s.p.now().Sub(s.start),
		UpstreamCluster:         s.clusterName,
		ConnectionID:            s.id,
		DownstreamRemoteAddress: accesslog.AddressString(s.down.RemoteAddr()),
		DownstreamLocalAddress:  accesslog.AddressString(s.down.LocalAddr()),
		RequestedServerName:     accesslog.RequestedServerName(s.down),
		FilterChainName:         accesslog.FilterChainName(s.down),
		TLS:                     tlsconfig.AccessLogInfo(s.down),
		// The connection's dynamic metadata (its listener filters'):
		// Envoy's tcp_proxy logs the connection's stream info.
		DynamicMetadata: netfilter.DynamicMetadataOf(s.down),
	}
	e.TLSJA3Fingerprint, e.TLSJA4Fingerprint = accesslog.TLSFingerprints(s.down)
	if fs, ok := s.down.(netfilter.FilterStater); ok {
		// The connection's filter state (set_filter_state's objects).
		e.ConnFilterState = fs
	}
	// The connection's goroutine sets these before it starts the timers
	// that log too, and logs itself otherwise.
	if s.host != nil {
		e.UpstreamHost = s.host.Address
		e.UpstreamHostMetadata = s.host.Metadata
	}
	e.ClusterMetadata = s.clusterMetadata
	e.UpstreamLocalAddress = s.up.local
	e.UpstreamTLS = s.up.tls
	e.UpstreamTransportFailureReason = s.failureReason
	e.UpstreamRequestAttemptCount = s.attempts
	if s.dynMeta != nil {
		e.DynamicMetadata = s.dynMeta
	}
	if s.respHeaders != nil {
		e.FilterState = map[string]accesslog.FilterStateObject{responseHeadersKey: tunnelhttp.HeaderMap{M: s.respHeaders}}
	}
	if tr := s.respTrailers.Load(); tr != nil {
		if e.FilterState == nil {
			e.FilterState = map[string]accesslog.FilterStateObject{}
		}
		e.FilterState[responseTrailersKey] = tunnelhttp.HeaderMap{M: tr}
	}
	return e
}
