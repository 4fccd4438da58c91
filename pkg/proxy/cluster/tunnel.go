package cluster

import (
	"context"
	"net"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// DialTCP opens a plain TCP connection to h, one of the cluster's hosts,
// within the connect timeout, counted in the cluster's and the host's
// connection stats and closed with the cluster: what a CONNECT request
// terminated at the proxy (a route's connect_config) carries its payload
// on. The caller owns the connection.
func (c *Cluster) DialTCP(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	tc, err := c.connect(ctx, h)
	if err != nil {
		return nil, err
	}
	return tc, nil
}

// CloseWrite half-closes the connection's writes, when its transport can
// (TCP): a tunnel passes on the end of one direction this way while the
// other goes on.
func (tc *trackedConn) CloseWrite() error {
	if cw, ok := tc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
