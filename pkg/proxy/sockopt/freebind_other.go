//go:build !linux

package sockopt

import "errors"

// Freebind is not available outside Linux, as in Envoy.
func Freebind(bool) (Option, error) {
	return Option{}, errors.New("freebind is only supported on Linux")
}
