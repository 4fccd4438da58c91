package listenerfilter

import (
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// WatchPeerClose calls gone, on a goroutine of its own, when the peer of
// c closes or resets the connection, reading nothing of it: the bytes the
// peer sent stay in the socket's receive queue for whoever reads c next.
// It is how a read filter that holds a connection without reading it (a
// call to a rate limit service) learns that the client left, as Envoy
// sees the remote close while reading is disabled. stop ends the watch
// and returns once gone has run or will not run; c's read deadline is
// clear afterwards. On a connection that is not a socket (or off Linux)
// nothing is watched.
func WatchPeerClose(c net.Conn, gone func()) (stop func()) {
	sock := socketOf(c)
	if sock == nil {
		return func() {}
	}
	raw, err := sock.SyscallConn()
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var closed bool
		var b [1]byte
		_ = raw.Read(func(fd uintptr) bool {
			for {
				n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
				switch {
				case errors.Is(err, unix.EINTR):
					continue
				case errors.Is(err, unix.EAGAIN):
					return false // nothing yet: wait for the socket to be readable
				case err != nil, n == 0, peerClosed(int(fd)):
					// A reset, or the FIN (after the bytes waiting, if any).
					closed = true
					return true
				}
				// Bytes wait and the peer is still there: the next
				// readiness event is more bytes or its close.
				return false
			}
		})
		if closed {
			gone()
		}
	}()
	return func() {
		// A past deadline wakes the watch up; then the deadline goes.
		_ = sock.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = sock.SetReadDeadline(time.Time{})
	}
}

// socketOf finds the socket under c through the connections' NetConn, or
// returns nil.
func socketOf(c net.Conn) interface {
	net.Conn
	syscall.Conn
} {
	for range 8 {
		if s, ok := c.(interface {
			net.Conn
			syscall.Conn
		}); ok {
			return s
		}
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = nc.NetConn()
	}
	return nil
}
