package httpconn

import (
	"errors"
	"io"
	"time"
)

// maxLingerBytes bounds what a connection in its delayed close reads and
// drops: a client still sending that much is not waiting for the
// response, and the connection closes at once.
const maxLingerBytes = 256 << 10

// delayedClose ends a connection the proxy closes after writing its last
// response, as Envoy's FlushWriteAndDelay close does: the response has
// been flushed; the socket then stays open until the client closes its
// side or delayed_close_timeout passes, whichever comes first, and only
// then closes. Closing at once would leave the client's unread request
// bytes (or ones in flight) in the kernel, which then answers with a
// reset that can destroy the response before the client reads it.
//
// What the client still sends meanwhile is read and dropped, up to
// maxLingerBytes. When the timeout fires before the client closed,
// downstream_cx_delayed_close_timeout counts it, as in Envoy. A timeout
// of 0 disables the wait: the socket closes right after the flush.
//
// halfClose shuts the write side first, for a response whose end is the
// connection's end (a body without a length, to an HTTP/1.0 client):
// the client can only finish reading it once it sees that end. Envoy
// keeps the write side open in every case; a client of such a response
// would wait for the timeout.
//
// Manager.Close and Shutdown end the wait at once, as they end an idle
// connection. HTTP/2 connections can call this too, with the GOAWAY
// flushed, in place of a fixed linger.
func (c *serverConn) delayedClose(halfClose bool) {
	t := c.m.cfg.delayedCloseTimeout
	if t <= 0 || !c.setIdle(true) {
		_ = c.nc.Close()
		return
	}
	defer func() { _ = c.nc.Close() }()
	if halfClose {
		if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	c.rd.forget()
	_ = c.nc.SetReadDeadline(time.Now().Add(t))
	n, err := io.CopyN(io.Discard, c.input(), maxLingerBytes)
	switch {
	case n >= maxLingerBytes:
		// Still sending: not a client waiting for the response.
	case errors.Is(err, io.EOF):
		c.remoteClosed = true
	case isTimeout(err):
		if !c.closingNow() {
			c.m.stats.cxDelayedCloseTimeout.Inc()
		}
	default:
		// A reset: the client is gone.
		c.remoteClosed = true
	}
}
