package cluster

import (
	"context"
	"errors"
	"net"
)

// ErrNoHealthyHost: the load balancer found no host to connect to.
var ErrNoHealthyHost = errors.New("no healthy upstream host")

// Connect picks a host with the cluster's load balancer and opens a plain
// connection to it within the connect timeout, counted in the cluster's
// and the host's connection stats and closed with the cluster: what a gRPC
// channel to the cluster dials. The caller owns the connection.
func (c *Cluster) Connect(ctx context.Context) (net.Conn, error) {
	h := c.PickHost()
	if h == nil {
		return nil, ErrNoHealthyHost
	}
	tc, err := c.connect(ctx, h)
	if err != nil {
		return nil, err
	}
	return tc, nil
}
