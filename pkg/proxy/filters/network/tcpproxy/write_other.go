//go:build !unix

package tcpproxy

import "io"

// writer writes to one connection; without raw descriptors it cannot see
// a wait.
type writer struct {
	c io.Writer
	// onWait is never called: a wait cannot be seen.
	onWait func()
}

func newWriter(c io.Writer) *writer { return &writer{c: c} }

// write writes all of p.
func (w *writer) write(p []byte) (n int, waited bool, err error) {
	n, err = w.c.Write(p)
	return n, false, err
}
