package transport

import (
	"crypto/tls"
	"errors"
	"net"
)

// conn is a tapped connection. It has no NetConn, SyscallConn or
// ReadFrom on purpose: the proxy's fast paths (splice, writes on the raw
// descriptor) look for them, and would bypass the tap.
type conn struct {
	net.Conn
	t *tracer
}

// Read implements net.Conn: what was read is recorded.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.t.read(p[:n])
	}
	return n, err
}

// Write implements net.Conn: what was written is recorded.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.t.write(p[:n])
	}
	return n, err
}

// Close implements net.Conn: the trace ends (the first time).
func (c *conn) Close() error {
	c.t.close()
	return c.Conn.Close()
}

// CloseWrite half-closes the connection under the tap, when it can.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// ConnectionState is the state of the TLS session under the tap (the
// zero value over plaintext), for what looks at the negotiated protocol.
func (c *conn) ConnectionState() tls.ConnectionState {
	if tc, ok := c.Conn.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}
