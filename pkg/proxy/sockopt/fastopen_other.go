//go:build !linux

package sockopt

import "errors"

// TCPFastOpen is not offered outside Linux.
func TCPFastOpen(uint32) (Option, error) {
	return Option{}, errors.New("TCP Fast Open is only supported on Linux")
}
