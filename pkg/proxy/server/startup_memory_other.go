//go:build !linux

package server

// dropExecutablePages does nothing where /proc/self/smaps does not exist.
func dropExecutablePages() (int64, error) { return 0, nil }
