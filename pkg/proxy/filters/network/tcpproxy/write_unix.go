//go:build unix

package tcpproxy

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// writeAll writes p to c and reports whether it had to wait for c to
// drain (its send buffer was full): then the reading of the other side
// paused, which is what the flow-control stats count. It writes through
// the socket's raw descriptor to see that wait; other connections are
// written as usual and never report one.
func writeAll(c net.Conn, p []byte) (n int, waited bool, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		n, err = c.Write(p)
		return n, false, err
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := syscall.Write(int(fd), p[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == nil && m <= 0:
				werr = io.ErrShortWrite
				return true
			case e == nil:
			case errors.Is(e, syscall.EINTR):
			case errors.Is(e, syscall.EAGAIN):
				waited = true
				return false // wait until writable, then called again
			default:
				werr = e
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, waited, err
}
