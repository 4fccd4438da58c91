//go:build unix

package httpconn

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// inputPending reports whether bytes from the peer wait in the socket's
// receive queue, without reading them or waiting: one non-blocking peek.
// It answers false when the connection gives no access to its socket.
func inputPending(nc net.Conn) bool {
	if inner, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = inner.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	pending := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		pending = err == nil && n > 0
	})
	return pending
}
