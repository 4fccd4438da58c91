package listener

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// Transport is a compiled transport socket: TLS (nil: plaintext, as
// raw_buffer is) and what taps the plaintext side (nil: nothing).
type Transport struct {
	TLS *tlsconfig.Server
	Tap ConnWrapper
	// TCPStats is the tcp_stats transport socket, nil for none: it wraps
	// each connection under the tap.
	TCPStats ConnWrapper
}

// ConnWrapper wraps each connection of a filter chain once its handshake
// is done: the tap transport socket, which records what the connection
// reads and writes.
type ConnWrapper interface {
	// Wrap returns the connection to use instead of c (or c); local and
	// remote are the connection's addresses as the listener filters left
	// them.
	Wrap(c net.Conn, local, remote net.Addr) net.Conn
}

// compileTransport compiles a filter chain's transport_socket and its
// transport_socket_connect_timeout. Errors name the field below the
// filter chain.
func (c *chain) compileTransport(fc *listenerv3.FilterChain, build func(*corev3.TransportSocket) (Transport, error)) error {
	var errs []error
	if d := fc.GetTransportSocketConnectTimeout(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			errs = append(errs, errors.New("transport_socket_connect_timeout: not a valid duration"))
		}
		c.connectTimeout = d.AsDuration()
	}
	ts := fc.GetTransportSocket()
	if ts == nil {
		return errors.Join(errs...)
	}
	if build == nil {
		return errors.Join(append(errs, errors.New("transport_socket: not supported here"))...)
	}
	t, err := build(ts)
	if err != nil {
		errs = append(errs, PrefixErrors("transport_socket.", err)...)
	}
	c.tls, c.tap, c.tcpStats = t.TLS, t.Tap, t.TCPStats
	return errors.Join(errs...)
}

// Admitter is a ConnHandler that decides whether to take a connection
// before its TLS handshake, as Envoy's read filters (connection limits)
// see a connection as soon as it is made: Admit, before the handshake,
// reports whether the connection goes on (else it has closed it), and
// Serve takes it over after the handshake.
type Admitter interface {
	ConnHandler
	Admit(c net.Conn) bool
	Serve(c net.Conn)
}

// serve runs a connection's TLS handshake when its filter chain has a TLS
// transport socket, then hands the connection to the chain (an Admitter
// admits it first), through the chain's tap when it has one. A failed
// handshake (counted in ssl.*, the peer having had its alert) closes the
// connection.
func (l *Listener) serve(conn *Conn, ch *chain) {
	a, admits := ch.handler.(Admitter)
	if admits && !a.Admit(conn) {
		return
	}
	if ch.tls != nil && !l.handshake(conn, ch) {
		return
	}
	if ch.tcpStats != nil {
		conn.Conn = ch.tcpStats.Wrap(conn.Conn, conn.LocalAddr(), conn.RemoteAddr())
	}
	if ch.tap != nil {
		conn.Conn = ch.tap.Wrap(conn.Conn, conn.LocalAddr(), conn.RemoteAddr())
	}
	if admits {
		a.Serve(conn)
		return
	}
	ch.handler.HandleConn(conn)
}

// handshake runs the server handshake of conn, within the chain's
// transport_socket_connect_timeout (downstream_cx_transport_socket_connect_timeout
// when it passes), and reports whether the connection goes on. The
// timeout is a deadline on the socket, cleared after the handshake: a
// context with a deadline would cost a timer and, in crypto/tls, a
// goroutine per handshake to watch it.
func (l *Listener) handshake(conn *Conn, ch *chain) bool {
	if ch.connectTimeout > 0 {
		_ = conn.Conn.SetDeadline(time.Now().Add(ch.connectTimeout))
	}
	tc, hs, err := ch.tls.HandshakeState(context.Background(), conn.Conn, l.tlsStats)
	if err == nil && ch.connectTimeout > 0 {
		// A socket that fails this has failed for its handler too.
		_ = conn.Conn.SetDeadline(time.Time{})
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			l.stats.cxTransportTimeout.Inc()
		}
		l.log.V(1).Info("TLS handshake failed", "listener", l.name, "remote", conn.RemoteAddr().String(), "error", err.Error())
		if conn.log != nil {
			conn.hookMu.Lock()
			conn.log.failure = tlsconfig.DownstreamFailureReason(err)
			conn.hookMu.Unlock()
		}
		_ = conn.Close()
		return false
	}
	conn.tls, conn.Conn, conn.localCert, conn.peerValidated = tc, tc, hs.Local, hs.PeerValidated
	if conn.serverName == "" {
		conn.serverName = tc.ConnectionState().ServerName
	}
	return true
}

// hasTLS reports whether some filter chain of the listener runs TLS.
func (s *chainSet) hasTLS() bool {
	if s.dflt != nil && s.dflt.tls != nil {
		return true
	}
	for _, c := range s.chains {
		if c.tls != nil {
			return true
		}
	}
	return false
}

// TLSContexts are the TLS contexts of the listener's filter chains, in
// configuration order (the default chain's last), for /certs.
func (l *Listener) TLSContexts() []*tlsconfig.Server {
	var out []*tlsconfig.Server
	for _, c := range l.chains.chains {
		if c.tls != nil {
			out = append(out, c.tls)
		}
	}
	if d := l.chains.dflt; d != nil && d.tls != nil {
		out = append(out, d.tls)
	}
	return out
}
