//go:build !unix

package tcpproxy

import "net"

// writer writes to one connection; without raw descriptors it cannot see
// a wait.
type writer struct{ c net.Conn }

func newWriter(c net.Conn) *writer { return &writer{c: c} }

// write writes all of p.
func (w *writer) write(p []byte) (n int, waited bool, err error) {
	n, err = w.c.Write(p)
	return n, false, err
}
