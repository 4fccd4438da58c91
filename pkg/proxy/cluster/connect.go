package cluster

import (
	"context"
	"errors"
	"net"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// ErrNoHealthyHost: the load balancer found no host to connect to.
var ErrNoHealthyHost = errors.New("no healthy upstream host")

// Connect picks a host with the cluster's load balancer and opens a plain
// connection to it within the connect timeout, counted in the cluster's
// and the host's connection stats and closed with the cluster: what a gRPC
// channel to the cluster dials. The caller owns the connection.
func (c *Cluster) Connect(ctx context.Context) (net.Conn, error) {
	h := c.PickHost(nil)
	if h == nil {
		return nil, ErrNoHealthyHost
	}
	return c.ConnectHost(ctx, h)
}

// ConnectHost opens a plain connection to h, a host PickHost chose, as
// Connect does: the TCP proxy picks the host itself so that it knows it
// even when connecting fails (%UPSTREAM_HOST%, retries on another host).
// The connection supports CloseWrite (a half-close) and NetConn.
//
// The connection counts against max_connections until it closes; at the
// limit it is not opened: upstream_cx_overflow counts it and the error is
// upstream.ErrOverflow, as Envoy's TCP proxy refuses a connection.
func (c *Cluster) ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	cx := c.breakers().cx
	if !cx.tryAcquire() {
		c.extra.cxOverflow.Inc()
		return nil, upstream.ErrOverflow
	}
	tc, err := c.connect(ctx, h, nil)
	if err != nil {
		c.releaseConnSlot(cx)
		return nil, err
	}
	tc.cx = cx
	return tc, nil
}
