//go:build unix

package httpconn

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerGone reports whether the peer closed or reset the connection,
// without reading anything or waiting: one non-blocking peek sees the end
// of the stream, or an error, where bytes would otherwise wait. Bytes
// waiting (a pipelined request, a body) mean the peer is still there. A
// connection closed on this side counts as gone.
func peerGone(nc net.Conn) bool {
	if inner, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = inner.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	if err := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == nil:
			gone = n == 0
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		default:
			gone = true
		}
	}); err != nil {
		return true
	}
	return gone
}
