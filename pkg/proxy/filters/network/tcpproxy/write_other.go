//go:build !unix

package tcpproxy

import "net"

// writeAll writes p to c; without raw descriptors it cannot see a wait.
func writeAll(c net.Conn, p []byte) (n int, waited bool, err error) {
	n, err = c.Write(p)
	return n, false, err
}
