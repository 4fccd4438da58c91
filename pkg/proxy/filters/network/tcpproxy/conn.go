package tcpproxy

import (
	"errors"
	"net"
)

// rawConn returns the socket under a connection that wraps one (the
// listener's and the cluster's connections, which count their close), for
// the data path's reads and writes; closing still goes through c.
func rawConn(c net.Conn) net.Conn {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		return nc.NetConn()
	}
	return c
}

// closeWrite half-closes c: the peer reads the end of the stream while
// the other direction goes on.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
