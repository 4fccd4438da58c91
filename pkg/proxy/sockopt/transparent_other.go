//go:build !linux

package sockopt

import "errors"

// Transparent is not available outside Linux, as in Envoy.
func Transparent(bool) (Option, error) {
	return Option{}, errors.New("IP_TRANSPARENT is only supported on Linux")
}

// Mark is not available outside Linux, as in Envoy.
func Mark(uint32) (Option, error) {
	return Option{}, errors.New("SO_MARK is only supported on Linux")
}
