//go:build !linux

package httpconn

import (
	"errors"
	"syscall"
)

// inqReader: TCP_INQ is Linux's; elsewhere no connection serves inline.
type inqReader struct{}

// enableInq fails on this platform.
func enableInq(syscall.RawConn) bool { return false }

// read is never called on this platform.
func (*inqReader) read(uintptr, []byte) (int, bool, bool, error) {
	return 0, false, true, errors.ErrUnsupported
}
