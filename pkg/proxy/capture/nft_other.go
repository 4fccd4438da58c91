//go:build !linux

package capture

import "errors"

// apply has no nf_tables to program off Linux.
func apply(*Config) error {
	return errors.New("transparent capture needs Linux (nf_tables)")
}
