//go:build unix && !linux

package cluster

import "golang.org/x/sys/unix"

// peekByte looks at the next byte of a socket without consuming it or
// waiting for it.
func peekByte(fd uintptr, buf *[1]byte) (int, error) {
	n, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return n, err
}
