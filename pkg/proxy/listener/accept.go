package listener

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
)

// Bounds of the delay between retries of a failing accept (EMFILE and the
// like): short enough to recover quickly, long enough not to spin.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// bindAddress opens n sockets on a, each with the socket options opts and,
// unless backlog is -1, that accept queue. With reusePort each socket
// sets SO_REUSEPORT, and when a asks for port 0 the first socket's port is
// reused for the others, so all the workers share one OS-chosen port.
// With mptcp the sockets are MPTCP ones (enable_mptcp).
func bindAddress(a socketAddress, n int, reusePort bool, backlog int, mptcp bool, opts sockopt.Set) ([]net.Listener, error) {
	// Envoy does not turn TCP keep-alive on for downstream connections;
	// neither do we (Go would by default).
	lc := net.ListenConfig{KeepAlive: -1}
	lc.SetMultipathTCP(mptcp)
	switch {
	case reusePort && len(opts) > 0:
		lc.Control = sockopt.Chain(setReusePort, opts.Control)
	case reusePort:
		lc.Control = setReusePort
	case len(opts) > 0:
		lc.Control = opts.Control
	}
	ctx := context.Background()
	listen := func(at string) (net.Listener, error) {
		ln, err := lc.Listen(ctx, a.network, at)
		if err != nil {
			return nil, err
		}
		if err := opts.ApplyListening(ln); err != nil {
			_ = ln.Close()
			return nil, err
		}
		if backlog >= 0 {
			if err := setBacklog(ln, backlog); err != nil {
				_ = ln.Close()
				return nil, err
			}
		}
		return ln, nil
	}
	first, err := listen(a.String())
	if err != nil {
		return nil, err
	}
	socks := []net.Listener{first}
	at := netip.AddrPortFrom(a.addr.Addr(), addrPort(first.Addr()).Port()).String()
	for len(socks) < n {
		ln, err := listen(at)
		if err != nil {
			closeAll(socks)
			return nil, err
		}
		socks = append(socks, ln)
	}
	return socks, nil
}

// acceptLoop accepts on ln for one worker until the listener stops. While
// stop_accepting_connections pauses the listener it accepts nothing, and
// new connections wait in the kernel's accept queue.
func (l *Listener) acceptLoop(ln net.Listener, ws *workerStats) {
	var delay time.Duration
	for {
		if !l.waitResume() {
			return
		}
		c, err := ln.Accept()
		if err == nil {
			delay = 0
			l.accept(c, ws)
			// One connection per turn, as Envoy accepts one per socket
			// event by default: the goroutines of the connections
			// already open run before the next accept, so a client
			// that opens connections as fast as they are closed
			// cannot crowd the others out.
			runtime.Gosched()
			continue
		}
		if errors.Is(err, net.ErrClosed) || l.Stopped() {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Woken by a pause (or the end of one that raced with this
			// Accept): look at the pause state again.
			l.clearStaleDeadline(ln)
			continue
		}
		delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
		l.log.Error(err, "accept failed; retrying", "listener", l.name, "delay", delay.String())
		select {
		case <-time.After(delay):
		case <-l.stopCh:
			return
		}
	}
}

// accept admits a new connection, in Envoy's order: the global connection
// limit (downstream_global_cx_overflow), reject_incoming_connections
// (downstream_cx_overload_reject), the listener's own connection limit
// (downstream_cx_overflow), the listener filters, and the filter chain
// match (no_filter_chain_match); a connection refused by any of them is
// closed at once. An admitted connection is handed to its filter chain and
// counted for a worker (see assignWorker). Without listener filters the
// chain is chosen here, on the accept loop; with them, on the
// connection's own goroutine once they are done, so that a slow client
// holds up no other.
func (l *Listener) accept(c net.Conn, ws *workerStats) {
	if l.overload != nil {
		if !l.overload.AcquireConnection(l.enforceGlobal) {
			l.stats.globalCxOverflow.Inc()
			l.refuse(c, "global downstream connection limit reached")
			return
		}
		if l.overload.RejectConnection() {
			l.overload.ReleaseConnection()
			l.stats.cxOverloadReject.Inc()
			l.refuse(c, "rejected by the overload manager (reject_incoming_connections)")
			return
		}
	}
	if !l.reserve() {
		l.releaseGlobal()
		l.stats.cxOverflow.Inc()
		l.refuse(c, "listener connection limit reached")
		return
	}
	if len(l.lfilters) > 0 {
		l.conns.run(func() { l.runListenerFilters(c, ws, nil) })
		return
	}
	if conn, ch := l.admit(c, ws, nil); conn != nil {
		l.conns.run(func() { l.serve(conn, ch) })
	}
}

// admit chooses the filter chain of a connection the listener has
// reserved and returns the connection as its chain takes it, or nil when
// no chain matches (the connection is then closed). sock, when not nil,
// carries the addresses the listener filters restored (and, for the
// listener's access logs, when the connection was accepted).
func (l *Listener) admit(c net.Conn, ws *workerStats, sock *listenerfilter.Socket) (*Conn, *chain) {
	local, remote := c.LocalAddr(), c.RemoteAddr()
	direct := addrPort(remote)
	if sock != nil && sock.Restored() {
		local, remote = sock.LocalAddr(), sock.RemoteAddr()
	}
	det := detected{transport: rawBuffer}
	if sock != nil {
		if t := sock.DetectedTransportProtocol(); t != "" {
			det.transport = t
		}
		det.sni, det.alpn = sock.RequestedServerName(), sock.ApplicationProtocols()
	}
	ch := l.chains.findDetected(addrPort(local), addrPort(remote), direct, det)
	if ch == nil {
		l.unreserve()
		l.stats.noFilterChainMatch.Inc()
		if l.logs != nil {
			l.logUnserved(c, sock, l.acceptedAt(sock, l.now()), accesslog.NoRouteFound, filterChainNotFound)
		}
		l.refuse(c, "no matching filter chain found")
		return nil, nil
	}
	if tcp, ok := c.(*net.TCPConn); ok && l.setBuffers {
		// The kernel's buffers bound what a connection holds in flight; a
		// failure only leaves the defaults in place.
		_ = tcp.SetReadBuffer(int(min(l.bufferLimit, 1<<30)))
		_ = tcp.SetWriteBuffer(int(min(l.bufferLimit, 1<<30)))
	}
	ws = l.assignWorker(ws)
	l.stats.cxTotal.Inc()
	l.stats.cxActive.Inc()
	ws.cxTotal.Inc()
	conn := &Conn{Conn: c, owner: l, worker: ws, chain: ch.name, chainNamed: ch.named, start: l.now(), bufferLimit: l.bufferLimit, serverName: det.sni}
	if sock != nil {
		conn.ja3, conn.ja4 = sock.TLSFingerprints()
	}
	if sock != nil && sock.Restored() {
		conn.remote, conn.local, conn.localRestored = remote, local, sock.LocalRestored()
	}
	if l.logs != nil {
		conn.log = &connLog{accepted: l.acceptedAt(sock, conn.start)}
	}
	if sock != nil {
		conn.source, conn.hasSource = sock.UpstreamSource()
		conn.metadata.Store(sock.DynamicMetadata())
		conn.pp, conn.hasPP = sock.ProxyProtocol()
	} else {
		conn.metadata.Store(listenerfilter.PassthroughMetadata(c))
	}
	if dl := l.log.V(1); dl.Enabled() {
		// Envoy's conn_handler debug record of every accepted connection.
		dl.Info("new connection from "+remote.String(), "listener", l.name, "local", local.String(), "filter_chain", ch.name)
	}
	return conn, ch
}

// unreserve ends the count of a connection closed before its filter chain
// took it.
func (l *Listener) unreserve() {
	l.active.Add(-1)
	l.releaseGlobal()
}

// refuse closes a connection the listener does not admit.
func (l *Listener) refuse(c net.Conn, why string) {
	l.log.V(1).Info("closing connection: "+why, "listener", l.name, "remote", c.RemoteAddr().String())
	_ = c.Close()
}

// releaseGlobal ends the global count of a connection.
func (l *Listener) releaseGlobal() {
	if l.overload != nil {
		l.overload.ReleaseConnection()
	}
}

// connClosed accounts for the end of a connection.
func (l *Listener) connClosed(c *Conn) {
	l.active.Add(-1)
	l.releaseGlobal()
	l.stats.cxActive.Dec()
	c.worker.cxActive.Dec()
	l.stats.cxDestroy.Inc()
	if dl := l.log.V(1); dl.Enabled() {
		dl.Info("connection closed", "listener", l.name, "remote", c.RemoteAddr().String(), "duration", l.now().Sub(c.start).String())
	}
	if d := l.now().Sub(c.start); d > 0 {
		l.stats.cxLengthMs.Record(uint64(d.Milliseconds()))
	} else {
		l.stats.cxLengthMs.Record(0)
	}
	if c.log != nil {
		l.connEnded(c)
	}
}
