package httpconn

import (
	"errors"
	"net"
	"syscall"
)

// isTimeoutErr reports whether err is a timeout: a deadline that fired, or
// a dial that ran out of connect_timeout.
func isTimeoutErr(err error) bool {
	if isTimeout(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isConnReset reports whether the peer reset or closed the connection
// under a write or read.
func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
