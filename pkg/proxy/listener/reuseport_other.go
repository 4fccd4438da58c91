//go:build !linux

package listener

import "syscall"

// reusePortSupported is false where SO_REUSEPORT does not balance
// connections between sockets (or does not exist): the workers then share
// one socket.
const reusePortSupported = false

// setReusePort is never called where reuse_port is unsupported.
func setReusePort(_, _ string, _ syscall.RawConn) error { return nil }
