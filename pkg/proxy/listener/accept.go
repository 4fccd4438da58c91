package listener

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"
)

// Bounds of the delay between retries of a failing accept (EMFILE and the
// like): short enough to recover quickly, long enough not to spin.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// bindAddress opens n sockets on a. With reusePort each socket sets
// SO_REUSEPORT, and when a asks for port 0 the first socket's port is
// reused for the others, so all the workers share one OS-chosen port.
func bindAddress(a socketAddress, n int, reusePort bool) ([]net.Listener, error) {
	// Envoy does not turn TCP keep-alive on for downstream connections;
	// neither do we (Go would by default).
	lc := net.ListenConfig{KeepAlive: -1}
	if reusePort {
		lc.Control = setReusePort
	}
	ctx := context.Background()
	first, err := lc.Listen(ctx, a.network, a.String())
	if err != nil {
		return nil, err
	}
	socks := []net.Listener{first}
	at := netip.AddrPortFrom(a.addr.Addr(), addrPort(first.Addr()).Port()).String()
	for len(socks) < n {
		ln, err := lc.Listen(ctx, a.network, at)
		if err != nil {
			closeAll(socks)
			return nil, err
		}
		socks = append(socks, ln)
	}
	return socks, nil
}

// acceptLoop accepts on ln for one worker until the listener stops.
func (l *Listener) acceptLoop(ln net.Listener, ws *workerStats) {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			delay = 0
			l.accept(c, ws)
			continue
		}
		if errors.Is(err, net.ErrClosed) || l.Stopped() {
			return
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

// accept selects the filter chain of a new connection and hands the
// connection to it, or closes it when no chain matches.
func (l *Listener) accept(c net.Conn, ws *workerStats) {
	ch := l.chains.find(addrPort(c.LocalAddr()), addrPort(c.RemoteAddr()))
	if ch == nil {
		l.stats.noFilterChainMatch.Inc()
		l.log.V(1).Info("closing connection: no matching filter chain found",
			"listener", l.name, "remote", c.RemoteAddr().String())
		_ = c.Close()
		return
	}
	if tcp, ok := c.(*net.TCPConn); ok && l.setBuffers {
		// The kernel's buffers bound what a connection holds in flight; a
		// failure only leaves the defaults in place.
		_ = tcp.SetReadBuffer(int(min(l.bufferLimit, 1<<30)))
		_ = tcp.SetWriteBuffer(int(min(l.bufferLimit, 1<<30)))
	}
	l.stats.cxTotal.Inc()
	l.stats.cxActive.Inc()
	ws.cxTotal.Inc()
	ws.cxActive.Inc()
	l.active.Add(1)
	conn := &Conn{Conn: c, owner: l, worker: ws, chain: ch.name, start: l.now(), bufferLimit: l.bufferLimit}
	go ch.handler.HandleConn(conn)
}

// connClosed accounts for the end of a connection.
func (l *Listener) connClosed(c *Conn) {
	l.active.Add(-1)
	l.stats.cxActive.Dec()
	c.worker.cxActive.Dec()
	l.stats.cxDestroy.Inc()
	if d := l.now().Sub(c.start); d > 0 {
		l.stats.cxLengthMs.Record(uint64(d.Milliseconds()))
	} else {
		l.stats.cxLengthMs.Record(0)
	}
}
