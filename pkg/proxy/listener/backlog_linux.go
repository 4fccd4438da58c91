package listener

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// setBacklog sets the accept queue of a listening socket to n
// (tcp_backlog_size). Go listens with net.core.somaxconn, the same default
// as Envoy's on Linux; listen(2) on a socket that already listens only
// changes its backlog, so the listener calls it again with the configured
// size. The kernel caps it at somaxconn, as it does Envoy's.
func setBacklog(ln net.Listener, n int) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return fmt.Errorf("tcp_backlog_size: %T has no file descriptor", ln)
	}
	c, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := c.Control(func(fd uintptr) { lerr = unix.Listen(int(fd), n) }); err != nil {
		return err
	}
	return os.NewSyscallError("listen", lerr)
}
