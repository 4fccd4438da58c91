//go:build linux

package listener

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePortSupported says whether the kernel spreads connections over
// several sockets bound to one port (SO_REUSEPORT), which lets every worker
// accept on a socket of its own.
const reusePortSupported = true

// setReusePort is a net.ListenConfig.Control function that sets
// SO_REUSEPORT before the socket is bound.
func setReusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt SO_REUSEPORT", serr)
}
