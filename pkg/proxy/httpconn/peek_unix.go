//go:build unix

package httpconn

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peek looks at the socket's receive queue with one non-blocking
// MSG_PEEK of one byte, which reads nothing.
func peek(nc net.Conn) peekState {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return peekUnknown
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return peekFailed
	}
	st := peekUnknown
	if err := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == nil && n > 0:
			st = peekBytes
		case err == nil:
			st = peekEOF
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			st = peekEmpty
		default:
			st = peekFailed
		}
	}); err != nil {
		return peekFailed
	}
	return st
}
