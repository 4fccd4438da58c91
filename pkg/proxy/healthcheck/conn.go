package healthcheck

import (
	"context"
	"net"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// checkConn is a check connection kept between checks: each check sets
// its deadline, and the session's end cuts whatever it is doing short.
// The deadline does the check's timing, so a check on a kept connection
// allocates no context or timer of its own.
type checkConn struct {
	net.Conn
	stop func() bool
}

// dialCheck opens a check connection within the check's deadline; ctx is
// the session's.
func (c *Checker) dialCheck(ctx context.Context, deadline time.Time, h *upstream.Host, addr string, alpn []string) (*checkConn, error) {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := c.env.Dial(dctx, h, addr, alpn)
	if err != nil {
		return nil, err
	}
	cc := &checkConn{Conn: conn}
	cc.stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	return cc, nil
}

// close closes the connection; nil is closed already.
func (cc *checkConn) close() {
	if cc == nil {
		return
	}
	cc.stop()
	_ = cc.Conn.Close()
}
