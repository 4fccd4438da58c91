//go:build !linux

package httpconn

// spliceSupported: elsewhere net.TCPConn.ReadFrom copies through a buffer
// of its own, which the proxy's copy does better.
const spliceSupported = false
