//go:build unix

package sockopt

import "golang.org/x/sys/unix"

// setsockopt sets one option on fd.
func setsockopt(fd uintptr, o Option) error {
	if o.Bytes != nil {
		return unix.SetsockoptString(int(fd), o.Level, o.Name, string(o.Bytes))
	}
	return unix.SetsockoptInt(int(fd), o.Level, o.Name, o.Int)
}
