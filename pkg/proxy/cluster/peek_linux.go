//go:build linux

package cluster

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// peekByte looks at the next byte of a socket without consuming it or
// waiting for it. It calls recvfrom directly: unix.Recvfrom allocates the
// source address it returns, which a connected TCP socket never fills in,
// and this runs for every reuse of an idle connection.
func peekByte(fd uintptr, buf *[1]byte) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), 1,
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
