package httpconn

import (
	"bufio"
	"errors"
	"io"
	"os"
	"syscall"
)

// An HTTP/1 connection waiting for its next request parks, and so does an
// HTTP/2 connection waiting for its next frame with nothing left to
// handle: it gives its read buffer, and an HTTP/1 connection its exchange
// state (h1Exchange: the stream, the output buffer, the upstream scratch
// space), back to the manager's pools while it waits, and takes them
// again when bytes arrive. An idle connection thus holds only its
// serverConn, and the buffers serve the connections that are busy.
//
// The wait goes through the socket's RawConn: its first read attempt
// reads straight into the read buffer (a read that does not wait), so
// bytes already there cost nothing more; when there are none, the buffers
// go back to the pools and the netpoller waits; once the socket is
// readable a read buffer is taken again and read into. A busy connection
// thus makes the same system calls as before (a read that finds nothing,
// the wait, a read), plus the pools' puts and gets.
//
// Only plaintext sockets park: a TLS connection may hold decrypted bytes
// that the socket no longer shows, and another wrapper may hold bytes of
// its own.
type parkState struct {
	// raw is the socket to wait on; nil when the connection does not
	// park.
	raw syscall.RawConn
	// readFn is the read attempt raw.Read makes, bound once; it records
	// in waited that the connection parked (the netpoller then woke it),
	// and in err what its read met.
	readFn func(fd uintptr) bool
	waited bool
	err    error
}

// errWouldBlock is what a read that does not wait returns when the socket
// has nothing to read.
var errWouldBlock = errors.New("nothing to read yet")

// startParking lets a connection serving requests over a plain socket
// park while it waits.
func (c *serverConn) startParking() {
	raw := parkableSocket(c.nc)
	if raw == nil {
		return
	}
	c.park.raw = raw
	c.park.readFn = c.readOrPark
}

// stopParking keeps the connection's buffers from now on: it serves no
// more requests, or an upstream transport may still read from them.
func (c *serverConn) stopParking() { c.park.raw = nil }

// readOrPark is raw.Read's attempt: before the wait, a read into the read
// buffer that does not wait, the connection parking when it finds nothing
// (raw.Read then waits for the socket); after it, nothing (the socket is
// readable).
func (c *serverConn) readOrPark(fd uintptr) bool {
	p := &c.park
	if p.waited {
		return true
	}
	if c.br == nil {
		c.takeReader()
	}
	c.src.fd, c.src.direct = fd, true
	_, err := c.br.Peek(1)
	c.src.direct = false
	if errors.Is(err, errWouldBlock) {
		c.letGo()
		p.waited = true
		return false
	}
	p.err = err
	return true
}

// awaitByte waits until the next request's first byte is in the read
// buffer; a connection that parks lets its buffers go meanwhile (see
// parkState).
func (c *serverConn) awaitByte() error {
	if c.park.raw == nil {
		_, err := c.br.Peek(1)
		return err
	}
	err := c.park.raw.Read(c.park.readFn)
	waited, readErr := c.park.waited, c.park.err
	c.park.waited, c.park.err = false, nil
	switch {
	case err != nil:
		// The deadline, or the connection closed; parked or not.
		return err
	case !waited:
		return readErr
	}
	c.takeReader()
	_, err = c.br.Peek(1)
	return err
}

// takeReader takes a read buffer from the manager's pool.
func (c *serverConn) takeReader() {
	c.br = c.m.readers.Get().(*bufio.Reader)
	c.br.Reset(&c.src)
}

// letGo gives the read buffer and the exchange state back to the
// manager's pools, unless an upstream transport may still read the last
// request's body from them; it reports whether it did.
func (c *serverConn) letGo() bool {
	x := c.x
	if x != nil && x.st.leaked {
		return false
	}
	if c.br != nil {
		c.br.Reset(nil)
		c.m.readers.Put(c.br)
		c.br = nil
	}
	if x != nil {
		c.x = nil
		c.xShared.Store(nil)
		c.m.exchanges.Put(x)
	}
	return true
}

// connSource is what a connection's read buffer reads: the connection,
// or, during a parked connection's read attempt, its socket directly
// without waiting (errWouldBlock when it has nothing).
type connSource struct {
	cc     *countedConn
	fd     uintptr
	direct bool
}

// Read implements io.Reader.
func (s *connSource) Read(p []byte) (int, error) {
	if !s.direct {
		return s.cc.Read(p)
	}
	n, wouldBlock, err := readSocket(s.fd, p)
	switch {
	case wouldBlock:
		return 0, errWouldBlock
	case err != nil:
		return 0, os.NewSyscallError("read", err)
	case n == 0:
		return 0, io.EOF
	}
	s.cc.stats.cxRxBytes.Add(uint64(n))
	return n, nil
}

// input is what the connection reads: its read buffer, or the socket
// while it is parked (nothing is buffered then).
func (c *serverConn) input() io.Reader {
	if c.br == nil {
		return c.cc
	}
	return c.br
}
