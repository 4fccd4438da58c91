package listener

import "golang.org/x/sys/unix"

// mptcpSupported reports whether the kernel opens MPTCP sockets, as
// Envoy's supportsMptcp checks before a listener with enable_mptcp binds:
// Go would otherwise fall back to plain TCP without a word.
func mptcpSupported() bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}
