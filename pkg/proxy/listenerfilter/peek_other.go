//go:build !linux

package listenerfilter

import "errors"

// Peek is not available off Linux: listener filters that inspect bytes
// close the connection (downstream_listener_filter_error).
func (s *Socket) Peek(buf []byte, want int) (int, error) {
	return 0, &ReadError{Err: errors.ErrUnsupported}
}
