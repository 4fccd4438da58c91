package adminclient

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Direct reaches a pod's admin interface at its pod IP and admin port. It
// only works where the admin listens on the pod IP, which the chart does
// not do (it binds 127.0.0.1); the cluster tests use it, with proxies on
// distinct loopback addresses standing in for pods.
type Direct struct {
	dialer net.Dialer
}

// NewDirect returns the direct transport; dialTimeout bounds each TCP
// connect.
func NewDirect(dialTimeout time.Duration) *Direct {
	return &Direct{dialer: net.Dialer{Timeout: dialTimeout}}
}

// Open returns a connection to e.IP:e.Port. Nothing is dialled until the
// first request, so an unreachable pod is reported by that request.
func (d *Direct) Open(_ context.Context, e Endpoint) (Conn, error) {
	addr := net.JoinHostPort(e.IP, strconv.Itoa(int(e.Port)))
	t := &http.Transport{
		// Every request goes to the pod, whatever the URL's host says.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.dialer.DialContext(ctx, network, addr)
		},
		Proxy:               nil,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
	}
	return directConn{t}, nil
}

// directConn is an http.Transport bound to one address.
type directConn struct {
	*http.Transport
}

// Close drops the idle connection kept for the next request.
func (c directConn) Close() error {
	c.CloseIdleConnections()
	return nil
}
