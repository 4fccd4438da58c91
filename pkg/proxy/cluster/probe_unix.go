//go:build unix

package cluster

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// prober tells whether an idle connection can still carry a request. An
// upstream that closed an idle keep-alive connection (its own idle timeout)
// or sent something unasked makes it unusable; finding out costs one
// non-blocking peek, which is much cheaper than a request failed on a
// dead connection.
type prober struct {
	raw syscall.RawConn
	// peek is built once per connection so that probing does not allocate.
	peek func(fd uintptr)
	err  error
	n    int
	buf  [1]byte
}

// init prepares probing of conn; connections without a file descriptor
// (tests' pipes) are taken as always usable.
func (p *prober) init(conn net.Conn) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	p.raw = raw
	p.peek = func(fd uintptr) {
		p.n, p.err = peekByte(fd, &p.buf)
	}
}

// usable reports whether nothing is waiting to be read: no end of stream,
// no unsolicited bytes, no error. Only "would block" says so (EWOULDBLOCK
// is EAGAIN on every Unix). The peek goes through Control, not Read: an
// idle connection keeps the deadline of its last request (see
// ReleaseHTTP1), which Read would find expired; the peek never waits.
func (p *prober) usable() bool {
	if p.raw == nil {
		return true
	}
	if err := p.raw.Control(p.peek); err != nil {
		return false
	}
	return errors.Is(p.err, unix.EAGAIN)
}

// peerEnded reports whether the last probe found the connection ended by
// the upstream: the end of its stream, or a reset.
func (p *prober) peerEnded() bool {
	return (p.err == nil && p.n == 0) || errors.Is(p.err, unix.ECONNRESET)
}
