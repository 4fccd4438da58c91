//go:build !linux

package listenerfilter

import "errors"

// peekSocket is not available off Linux: listener filters that inspect
// bytes of a socket close the connection (downstream_listener_filter_error).
func (s *Socket) peekSocket(buf []byte, want int) (int, error) {
	return 0, &ReadError{Err: errors.ErrUnsupported}
}
