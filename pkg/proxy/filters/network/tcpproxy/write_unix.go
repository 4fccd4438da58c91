//go:build unix

package tcpproxy

import (
	"errors"
	"io"
	"syscall"
)

// writer writes to one connection and reports whether a write had to wait
// for the connection to drain (its send buffer was full): then the
// reading of the other side paused, which is what the flow-control stats
// count. A socket is written through its raw descriptor to see that wait
// (the callback is bound once, so a write allocates nothing); other
// connections are written as usual and never report one.
type writer struct {
	c  io.Writer
	rc syscall.RawConn // nil: write through c
	fn func(fd uintptr) bool
	// onWait, when set, runs when a write starts waiting.
	onWait func()

	// The write in progress, for fn.
	p      []byte
	n      int
	waited bool
	err    error
}

func newWriter(c io.Writer) *writer {
	w := &writer{c: c}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			w.rc = rc
			w.fn = w.step
		}
	}
	return w
}

// write writes all of p.
func (w *writer) write(p []byte) (n int, waited bool, err error) {
	if w.rc == nil {
		n, err = w.c.Write(p)
		return n, false, err
	}
	w.p, w.n, w.waited, w.err = p, 0, false, nil
	err = w.rc.Write(w.fn)
	if err == nil {
		err = w.err
	}
	n, waited = w.n, w.waited
	w.p = nil
	return n, waited, err
}

// step writes what it can of the write in progress; false asks the
// poller to call it again once the socket is writable.
func (w *writer) step(fd uintptr) bool {
	for w.n < len(w.p) {
		m, e := syscall.Write(int(fd), w.p[w.n:])
		if m > 0 {
			w.n += m
		}
		switch {
		case e == nil && m <= 0:
			w.err = io.ErrShortWrite
			return true
		case e == nil:
		case errors.Is(e, syscall.EINTR):
		case errors.Is(e, syscall.EAGAIN):
			if !w.waited && w.onWait != nil {
				w.onWait()
			}
			w.waited = true
			return false
		default:
			w.err = e
			return true
		}
	}
	return true
}
