//go:build unix

package httpconn

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/sockio"
)

// parkableSocket is the socket a parked connection waits on: nc's own
// TCP or Unix socket, nil when nc is anything else (TLS, or a wrapper
// that may hold bytes the socket no longer shows).
func parkableSocket(nc net.Conn) syscall.RawConn {
	var sc syscall.Conn
	switch s := socketOf(nc).(type) {
	case *net.TCPConn:
		sc = s
	case *net.UnixConn:
		sc = s
	default:
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// readSocket reads from a non-blocking socket into p; wouldBlock reports
// that nothing was there to read.
func readSocket(fd uintptr, p []byte) (n int, wouldBlock bool, err error) {
	// A raw call: the socket is non-blocking, and a call that enters the
	// scheduler wakes its monitor thread (see sockio).
	n, e := sockio.RawIO(unix.SYS_READ, fd, p)
	switch e {
	case 0:
		return n, false, nil
	case unix.EAGAIN:
		return 0, true, nil
	}
	return 0, false, e
}
