//go:build !unix

package httpconn

import (
	"errors"
	"net"
	"syscall"
)

// parkableSocket: no connection parks on this platform.
func parkableSocket(net.Conn) syscall.RawConn { return nil }

// readSocket is never called where no connection parks.
func readSocket(uintptr, []byte) (int, bool, error) { return 0, false, errors.ErrUnsupported }
