//go:build !linux

package listener

import (
	"errors"
	"net"
)

// setBacklog is implemented on Linux only (see backlog_linux.go).
func setBacklog(net.Listener, int) error {
	return errors.New("tcp_backlog_size is only supported on Linux")
}
