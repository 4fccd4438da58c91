//go:build !linux

package listener

// mptcpSupported: MPTCP listeners are Linux only here.
func mptcpSupported() bool { return false }
