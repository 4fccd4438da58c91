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
func (c *Cluster) ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	tc, err := c.connect(ctx, h)
	if err != nil {
		return nil, err
	}
	return tc, nil
}
