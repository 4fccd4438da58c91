package listener

import (
	"fmt"
	"net"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// Listener access logs (Listener.access_log) log each downstream
// connection once, when it ends, as Envoy's active listener does: a
// connection its filter chain served when it closes; one no filter chain
// matched (NR, filter_chain_not_found) or a listener filter closed
// (rejected it, or listener_filters_timeout without
// continue_on_listener_filters_timeout) when the listener gives it up.
// The entries are of type NotSet, as Envoy logs them with an empty
// context. Connections refused before the listener takes them (the
// connection limits, the overload manager) are not logged, as in Envoy.

// filterChainNotFound is the response code details of a connection no
// filter chain matched (Envoy's ResponseCodeDetails FilterChainNotFound).
const filterChainNotFound = "filter_chain_not_found"

// AccessLogCompiler compiles an access_log list; prefix is its field
// path ("access_log").
type AccessLogCompiler func(prefix string, cfgs []*accesslogv3.AccessLog) (netfilter.AccessLogger, error)

// connLog is a logged connection's record for its listener's access
// logs; a connection of a listener without access_log has none, so that
// such a listener pays nothing for them. Guarded by the Conn's hookMu.
type connLog struct {
	// accepted is when the listener accepted the connection (before its
	// listener filters): the entry's start.
	accepted time.Time
	// info is what the connection's terminal network filter records
	// (tcp_proxy's bytes, upstream and flags); nil when it records
	// nothing.
	info netfilter.StreamInfo
	// held is set while the filter that gave info may still change it:
	// the connection's end is logged once it lets go (StreamInfoDone).
	held bool
	// pending is set when the connection closed while held.
	pending bool
	// failure is why the TLS handshake failed
	// (%DOWNSTREAM_TRANSPORT_FAILURE_REASON%).
	failure string
}

// compileAccessLogs compiles the listener's access_log; without one the
// listener logs nothing and pays nothing per connection. A UDP listener
// has no connections to log: Envoy logs listener access logs for stream
// (TCP) listeners only, so the field is refused there.
func (l *Listener) compileAccessLogs(lc *listenerv3.Listener, compile AccessLogCompiler) error {
	cfgs := lc.GetAccessLog()
	if len(cfgs) == 0 {
		return nil
	}
	if l.addrs[0].isUDP() {
		return fmt.Errorf("access_log: not supported on a UDP listener (listener access logs log TCP connections)")
	}
	if compile == nil {
		return fmt.Errorf("access_log: listener access logs are not supported here")
	}
	logs, err := compile("access_log", cfgs)
	if err != nil {
		return err
	}
	if !logs.Empty() {
		l.logs = logs
	}
	l.metadata = lc.GetMetadata()
	return nil
}

// AccessLogs is the listener's compiled access_log, nil when it has
// none; its owner closes it once the listener's connections are gone.
func (l *Listener) AccessLogs() netfilter.AccessLogger { return l.logs }

// acceptedAt is when a connection was accepted, for its access log entry:
// the time its listener filters' socket recorded, else dflt (a
// connection without listener filters is admitted as it is accepted).
func (l *Listener) acceptedAt(sock *listenerfilter.Socket, dflt time.Time) time.Time {
	if sock != nil && !sock.AcceptTime().IsZero() {
		return sock.AcceptTime()
	}
	return dflt
}

// SetStreamInfo records what the connection's terminal network filter
// knows of it for the listener's access logs, and holds the connection's
// log until the filter calls StreamInfoDone. It reports whether the
// listener took it (it logs its connections).
func (c *Conn) SetStreamInfo(si netfilter.StreamInfo) bool {
	if c.log == nil {
		return false
	}
	c.hookMu.Lock()
	c.log.info, c.log.held = si, true
	c.hookMu.Unlock()
	return true
}

// StreamInfoDone tells the listener that the filter that gave the
// connection's StreamInfo is done with it: the connection's end, when it
// came already, is logged now.
func (c *Conn) StreamInfoDone() {
	if c.log == nil {
		return
	}
	c.hookMu.Lock()
	c.log.held = false
	pending := c.log.pending
	c.log.pending = false
	c.hookMu.Unlock()
	if pending {
		c.owner.logConn(c)
	}
}

// connEnded logs the end of an admitted connection, unless its filter
// still holds its record (then StreamInfoDone logs it).
func (l *Listener) connEnded(c *Conn) {
	c.hookMu.Lock()
	if c.log.held {
		c.log.pending = true
		c.hookMu.Unlock()
		return
	}
	c.hookMu.Unlock()
	l.logConn(c)
}

// logConn logs a connection its filter chain took.
func (l *Listener) logConn(c *Conn) {
	c.hookMu.Lock()
	info, failure := c.log.info, c.log.failure
	c.hookMu.Unlock()
	e := &accesslog.Entry{DynamicMetadata: c.metadata.Load()}
	if info != nil {
		e = info.ConnectionLogEntry()
	}
	e.Type = 0 // NotSet: Envoy logs with an empty context
	e.StartTime = c.log.accepted
	e.Duration = l.now().Sub(c.log.accepted)
	e.DownstreamRemoteAddress = accesslog.AddressString(c.RemoteAddr())
	e.DownstreamLocalAddress = accesslog.AddressString(c.LocalAddr())
	e.RequestedServerName = c.serverName
	e.TLSJA3Fingerprint, e.TLSJA4Fingerprint = c.ja3, c.ja4
	e.FilterChainName = c.FilterChainName()
	e.TLS = tlsconfig.AccessLogInfo(c)
	e.DownstreamTransportFailureReason = failure
	e.ListenerMetadata = l.metadata
	e.ConnFilterState = c
	l.emit(e)
}

// logUnserved logs a connection the listener closed before a filter
// chain took it: no chain matched (flags NR, details
// filter_chain_not_found), or a listener filter closed it (no flags).
// sock, when not nil, has what the listener filters found.
func (l *Listener) logUnserved(c net.Conn, sock *listenerfilter.Socket, accepted time.Time, flags accesslog.ResponseFlags, details string) {
	local, remote := c.LocalAddr(), c.RemoteAddr()
	e := &accesslog.Entry{
		StartTime:           accepted,
		Duration:            l.now().Sub(accepted),
		ResponseFlags:       flags,
		ResponseCodeDetails: details,
		ListenerMetadata:    l.metadata,
	}
	if sock != nil {
		if sock.Restored() {
			local, remote = sock.LocalAddr(), sock.RemoteAddr()
		}
		e.RequestedServerName = sock.RequestedServerName()
		e.TLSJA3Fingerprint, e.TLSJA4Fingerprint = sock.TLSFingerprints()
		e.DynamicMetadata = sock.DynamicMetadata()
	}
	e.DownstreamRemoteAddress = accesslog.AddressString(remote)
	e.DownstreamLocalAddress = accesslog.AddressString(local)
	l.emit(e)
}

// emit writes e to the listener's access logs.
func (l *Listener) emit(e *accesslog.Entry) {
	if _, err := l.logs.Log(nil, e); err != nil {
		l.log.V(1).Info("listener access log", "listener", l.name, "error", err.Error())
	}
}
