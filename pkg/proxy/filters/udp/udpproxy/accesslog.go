package udpproxy

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// The dynamic metadata namespaces Envoy fills for the UDP proxy's access
// logs: a session's counts, and the proxy's.
const (
	sessionNamespace = "udp.proxy.session"
	proxyNamespace   = "udp.proxy.proxy"
)

// logEntry logs the session's access log entry of type t (UdpSessionEnd,
// UdpPeriodic, UdpTunnelUpstreamConnected).
func (s *session) logEntry(t datav3.AccessLogType) {
	if s.p.logs == nil {
		return
	}
	writeLog(s.p, s.p.logs, s.entry(t))
}

// entry describes the session as Envoy's session stream info has it: the
// client's and listener's addresses, the host, the bytes each way so far
// and the session's counts in the udp.proxy.session dynamic metadata;
// with a tunnel, its attempts and the response's headers and trailers
// kept in the filter state.
func (s *session) entry(t datav3.AccessLogType) *accesslog.Entry {
	e := &accesslog.Entry{
		StartTime:               s.start,
		Type:                    t,
		BytesReceived:           s.rxBytes.Load(),
		BytesSent:               s.txBytes.Load(),
		Duration:                s.p.now().Sub(s.start),
		UpstreamCluster:         s.cluster.Name(),
		ConnectionID:            s.id,
		DownstreamRemoteAddress: s.key.peer.String(),
		DownstreamLocalAddress:  s.key.local.String(),
		DynamicMetadata: metadata(sessionNamespace, map[string]any{
			"cluster_name":       s.cluster.Name(),
			"bytes_sent":         float64(s.txBytes.Load()),
			"bytes_received":     float64(s.rxBytes.Load()),
			"errors_sent":        float64(s.txErrors.Load()),
			"datagrams_sent":     float64(s.txDatagrams.Load()),
			"datagrams_received": float64(s.rxDatagrams.Load()),
		}),
	}
	h := s.host
	if s.tun != nil {
		h = s.tun.logHost()
		e.FilterState = s.tun.filterState()
		e.UpstreamRequestAttemptCount = s.tun.attemptCount()
	}
	if h != nil {
		e.UpstreamHost = h.Address
		e.UpstreamHostMetadata = h.Metadata
	}
	return e
}

// logPeriodic logs the session every access_log_flush_interval
// (UdpPeriodic) until it ends.
func (s *session) logPeriodic() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.ended {
		return
	}
	s.logEntry(datav3.AccessLogType_UdpPeriodic)
	s.flush.Reset(s.p.cfg.flushInterval)
}

// logProxy logs the proxy access log entry when the filter ends, with the
// proxy's stats in the udp.proxy.proxy dynamic metadata, as Envoy does.
func (p *Proxy) logProxy() {
	if p.proxyLogs == nil {
		return
	}
	st := p.stats
	e := &accesslog.Entry{
		StartTime:     p.start,
		Type:          datav3.AccessLogType_NotSet,
		BytesReceived: p.rx.Load(),
		BytesSent:     p.tx.Load(),
		Duration:      p.now().Sub(p.start),
		DynamicMetadata: metadata(proxyNamespace, map[string]any{
			"bytes_sent":         float64(st.txBytes.Value()),
			"bytes_received":     float64(st.rxBytes.Value()),
			"errors_sent":        float64(st.txErrors.Value()),
			"errors_received":    float64(st.rxErrors.Value()),
			"datagrams_sent":     float64(st.txDatagrams.Value()),
			"datagrams_received": float64(st.rxDatagrams.Value()),
			"no_route":           float64(st.noRoute.Value()),
			"session_total":      float64(st.sessTotal.Value()),
			"idle_timeout":       float64(st.idleTimeout.Value()),
		}),
	}
	writeLog(p, p.proxyLogs, e)
}

// metadata is dynamic metadata of one namespace.
func metadata(namespace string, fields map[string]any) *corev3.Metadata {
	st, err := structpb.NewStruct(fields)
	if err != nil {
		return nil // the fields are strings and numbers: never fails
	}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{namespace: st}}
}

// writeLog logs e with l.
func writeLog(p *Proxy, l netfilter.AccessLogger, e *accesslog.Entry) {
	if _, err := l.Log(nil, e); err != nil {
		p.log.V(1).Info("access log", "error", err.Error())
	}
}
