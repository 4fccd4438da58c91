package cluster

import (
	"context"
	"errors"
	"net"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// ErrNoHealthyHost: the load balancer found no host to connect to.
var ErrNoHealthyHost = errors.New("no healthy upstream host")

// Connect picks a host with the cluster's load balancer and opens a
// connection to it within the connect timeout, counted in the cluster's
// and the host's connection stats and closed with the cluster: what a gRPC
// channel or an HTTP client of the cluster dials. On a TLS cluster it
// offers the cluster's protocol by ALPN when alpn_protocols is empty (h2
// for an HTTP/2 cluster, else http/1.1), as Envoy's pools do. The caller
// owns the connection.
func (c *Cluster) Connect(ctx context.Context) (net.Conn, error) {
	h := c.PickHost(nil)
	if h == nil {
		return nil, ErrNoHealthyHost
	}
	if c.Delegates() {
		// An aggregate cluster's host is dialled by its own cluster,
		// with that cluster's protocol and TLS.
		if c = c.carrier(h); c == nil {
			return nil, errHostGone
		}
	}
	alpn := alpnHTTP1
	if c.settings.protocol.http2 {
		alpn = alpnHTTP2
	}
	return c.connectHost(ctx, h, alpn)
}

// ConnectHost opens a connection to h, a host PickHost chose, as Connect
// does but offering no protocol by ALPN on a TLS cluster (a TCP proxy's): the TCP proxy picks the host itself so that it knows it
// even when connecting fails (%UPSTREAM_HOST%, retries on another host).
// The connection supports CloseWrite (a half-close) and NetConn.
//
// The connection counts against max_connections until it closes; at the
// limit it is not opened: upstream_cx_overflow counts it and the error is
// upstream.ErrOverflow, as Envoy's TCP proxy refuses a connection.
func (c *Cluster) ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	if c.Delegates() {
		// The host's own cluster connects it.
		u := c.carrier(h)
		if u == nil {
			return nil, errHostGone
		}
		return u.ConnectHost(ctx, h)
	}
	conn, err := c.connectHost(ctx, h, nil)
	if tc, ok := conn.(*trackedConn); ok {
		tc.tcpPool.Store(true)
	}
	return conn, err
}

// connectHost is ConnectHost offering alpn on a TLS cluster.
func (c *Cluster) connectHost(ctx context.Context, h *upstream.Host, alpn []string) (net.Conn, error) {
	res := c.breakersFor(ctx)
	cx := &res.cx
	if hostFull(h, res, -1) && h.Stats.CxActive.Load() > 0 {
		// The host's own max_connections (per_host_thresholds): its
		// first connection opens whatever the limit, as in Envoy.
		c.extraCounter(extraCxOverflow).Inc()
		return nil, upstream.ErrOverflow
	}
	if !cx.tryAcquire() {
		c.extraCounter(extraCxOverflow).Inc()
		return nil, upstream.ErrOverflow
	}
	tc, err := c.connect(ctx, h, alpn)
	if err != nil {
		c.releaseConnSlot(cx)
		return nil, err
	}
	tc.cx = cx
	return tc, nil
}
