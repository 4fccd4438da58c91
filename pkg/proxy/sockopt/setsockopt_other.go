//go:build !unix

package sockopt

import "errors"

// setsockopt is not available here.
func setsockopt(uintptr, Option) error {
	return errors.New("socket options are not supported on this platform")
}
