package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockio"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tcpstats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/userspace"
)

// DialFunc opens a connection to address ("ip:port" or "[ipv6]:port"
// over TCP, a pipe's path over a unix domain socket). ctx carries the connect timeout. It is the seam for
// upstream TLS, source-address binding and tests.
type DialFunc func(ctx context.Context, address string) (net.Conn, error)

// tcpDialer is the DialFunc of a cluster when the server sets none: plain
// TCP, with TCP keep-alive only when the cluster configures it (Go's
// dialer would otherwise enable it; Envoy does not).
func tcpDialer(keepalive *net.KeepAliveConfig, bind *bindSettings) DialFunc {
	if keepalive == nil && bind == nil {
		// Most clusters: a function without a dialer of its own, which
		// would be some 150 bytes of every cluster's memory.
		return plainDial
	}
	d := net.Dialer{KeepAlive: -1}
	if keepalive != nil {
		d.KeepAliveConfig = *keepalive
	}
	if bind != nil {
		if bind.local != nil {
			d.LocalAddr = bind.local
		}
		if len(bind.opts) > 0 {
			d.Control = bind.opts.Control
		}
	}
	return func(ctx context.Context, address string) (net.Conn, error) {
		return dial(ctx, &d, bind, address)
	}
}

// plainDial dials plain TCP without keep-alive: tcpDialer's for a cluster
// with neither keep-alive nor bind settings.
func plainDial(ctx context.Context, address string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: -1}
	return dial(ctx, &d, nil, address)
}

// dial connects to a pipe endpoint over a unix domain socket, or over TCP
// with d, bound to the downstream's address when original_src asks.
func dial(ctx context.Context, d *net.Dialer, bind *bindSettings, address string) (net.Conn, error) {
	if upstream.IsPipe(address) {
		// A pipe endpoint: keep-alive and source binding are TCP's.
		var unix net.Dialer
		return unix.DialContext(ctx, "unix", address)
	}
	if src := upstream.SourceFrom(ctx); src.Addr.IsValid() {
		// original_src: the downstream's address.
		return dialFrom(ctx, *d, address, src)
	}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil && bind != nil && bind.local != nil {
		// upstream_bind_config.source_address: a bind error too.
		err = bindError(err, bind.local)
	}
	return conn, err
}

// keepaliveConfig converts a TcpKeepalive: each unset value keeps the
// system's default, as in Envoy.
func keepaliveConfig(ka *corev3.TcpKeepalive) *net.KeepAliveConfig {
	cfg := &net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}
	if v := ka.GetKeepaliveTime(); v != nil {
		cfg.Idle = time.Duration(v.GetValue()) * time.Second
	}
	if v := ka.GetKeepaliveInterval(); v != nil {
		cfg.Interval = time.Duration(v.GetValue()) * time.Second
	}
	if v := ka.GetKeepaliveProbes(); v != nil {
		cfg.Count = int(v.GetValue())
	}
	return cfg
}

// Errors a connection attempt can end with, besides the dialer's own.
var (
	// ErrConnectTimeout: the upstream did not accept the connection within
	// the cluster's connect_timeout. It is a net.Error whose Timeout is
	// true, like the dialer's own timeouts.
	ErrConnectTimeout error = connectTimeoutError{}
	// ErrClosed: the cluster was closed (the server is shutting down).
	ErrClosed = errors.New("cluster closed")
)

// connectTimeoutError is the type of ErrConnectTimeout.
type connectTimeoutError struct{}

func (connectTimeoutError) Error() string   { return "connection timeout" }
func (connectTimeoutError) Timeout() bool   { return true }
func (connectTimeoutError) Temporary() bool { return true }

// connect opens a connection to h within the connect timeout and counts
// it. A failure the upstream is responsible for (refused, unreachable,
// timed out, a failed TLS handshake) counts as a connect failure; an
// attempt abandoned because ctx ended (the downstream went away) counts
// nothing. On a cluster with upstream TLS the connect timeout covers the
// handshake too, as in Envoy, where a TLS connection is connected once
// its handshake is done; alpn are the protocols the pool offers when
// alpn_protocols is empty.
func (c *Cluster) connect(ctx context.Context, h *upstream.Host, alpn []string) (*trackedConn, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	start := c.now()
	dctx, cancel := context.WithTimeout(ctx, c.settings.connectTimeout)
	conn, err := c.dialVia(userspace.WithPassthrough(dctx, c.settings.iu.metadata(h, c.settings.metadata)), h, h.Address,
		func(ctx context.Context) (net.Conn, error) { return c.dialHost(ctx, h) })
	if err == nil {
		err = c.sendProxyHeader(dctx, conn)
	}
	var info *accesslog.TLSInfo
	if err == nil && c.tlsOf(h) != nil {
		conn, info, err = c.handshake(dctx, conn, alpn, h)
	}
	timedOut := ctx.Err() == nil && errors.Is(dctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connecting to %s: %w", h.Address, ctx.Err())
		}
		c.stats.UpstreamCxTotal.Inc()
		h.Stats.CxTotal.Add(1)
		c.stats.UpstreamCxConnectFail().Inc()
		h.Stats.CxConnectFail.Add(1)
		if le := (*upstream.LocalConnectError)(nil); errors.As(err, &le) && le.Bind {
			c.extraCounter(extraBindErrors).Inc()
		}
		reportConnectFailure(h, timedOut)
		if timedOut {
			c.stats.UpstreamCxConnectTimeout().Inc()
			return nil, fmt.Errorf("connecting to %s: %w after %s", h.Address, ErrConnectTimeout, c.settings.connectTimeout)
		}
		return nil, fmt.Errorf("connecting to %s: %w", h.Address, err)
	}
	if tcp, ok := netConnOf(conn).(*net.TCPConn); ok {
		// Go sets TCP_NODELAY by default; Envoy's pools always do, so say
		// it rather than rely on the default.
		_ = tcp.SetNoDelay(true)
	}
	var rec *tcpstats.Recorder
	if c.settings.tcpStats != nil {
		// Before the tap, which hides the socket underneath.
		rec = c.settings.tcpStats.Watch(conn)
	}
	conn = c.tapped(conn)
	now := c.now()
	tc := &trackedConn{Conn: conn, c: c, host: h, opened: now, tlsInfo: info, tcpStats: rec}
	if tcp, ok := conn.(*net.TCPConn); ok {
		// A plain TCP connection (nothing wraps it): its reads and
		// writes go straight to its socket (see sockio). TCP upstreams
		// are dialled as "tcp", which its errors name.
		tc.sock = sockio.New(tcp, "tcp")
	}
	if c.settings.tls != nil {
		tc.key.tls = tlsconfig.OverrideFrom(ctx)
	}
	tc.key.src = upstream.SourceFrom(ctx)
	tc.key.pp = c.ppKey(ctx)
	tc.keyed = tc.key != (poolKey{})
	c.stats.UpstreamCxTotal.Inc()
	c.stats.UpstreamCxActive.Inc()
	c.stats.UpstreamCxConnectMs.Record(uint64(now.Sub(start).Milliseconds()))
	h.Stats.CxTotal.Add(1)
	h.Stats.CxActive.Add(1)
	if !c.track(tc) {
		_ = tc.Close()
		return nil, ErrClosed
	}
	return tc, nil
}
