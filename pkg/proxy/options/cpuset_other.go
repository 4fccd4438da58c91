//go:build !linux

package options

import "errors"

// affinityCPUCount is only known on Linux; elsewhere --cpuset-threads falls
// back to the hardware thread count, as in Envoy.
func affinityCPUCount() (int, error) {
	return 0, errors.New("the cpuset size is only available on Linux")
}
