package httpconn

import (
	"bufio"
	"io"
	"os"
	"sync"
	"syscall"
)

// An HTTP/1 connection waiting for its next request parks, and so does an
// HTTP/2 connection waiting for its next frame with nothing left to
// handle: it gives its
// read buffer, its exchange state (h1Exchange: the stream, the output
// buffer, the upstream scratch space) back to the manager's pools and
// waits for its socket to become readable without a buffer. Only once
// bytes are there does it take a landing buffer, read them into it, and
// take a read buffer and an exchange again. An idle connection thus holds
// only its serverConn, and the buffers serve the connections that are
// busy. The socket is read directly, so a busy connection makes the same
// read system calls as before (one that finds nothing, the wait, one that
// reads); parking adds the pools' get and put and a copy of the bytes
// read out of the landing buffer.
//
// Only plaintext sockets park: a TLS connection may hold decrypted bytes
// that the socket no longer shows, and another wrapper may hold bytes of
// its own.
type parkState struct {
	// raw is the socket to wait on; nil when the connection does not
	// park.
	raw syscall.RawConn
	// readFn is the read attempt raw.Read makes at each wake-up, bound
	// once; it leaves the landing buffer it read into (nil when nothing
	// was read), the bytes read and the error in land, n and err.
	readFn func(fd uintptr) bool
	land   *[readBufferSize]byte
	n      int
	err    error
}

// startParking lets a connection serving requests over a plain socket
// park while it waits.
func (c *serverConn) startParking() {
	raw := parkableSocket(c.nc)
	if raw == nil {
		return
	}
	c.park.raw = raw
	c.park.readFn = c.readParked
}

// stopParking keeps the connection's buffers from now on: it serves no
// more requests, or an upstream transport may still read from them.
func (c *serverConn) stopParking() { c.park.raw = nil }

// readParked is one read attempt of a parked connection: it reads into a
// landing buffer, and gives the buffer back when nothing is there yet
// (raw.Read then waits for the socket to become readable).
func (c *serverConn) readParked(fd uintptr) bool {
	p := &c.park
	if p.land == nil {
		p.land = c.m.landings.Get().(*[readBufferSize]byte)
	}
	n, wouldBlock, err := readSocket(fd, p.land[:])
	if wouldBlock {
		c.m.landings.Put(p.land)
		p.land = nil
		return false
	}
	p.n, p.err = n, err
	return true
}

// awaitByte waits until the next request's first byte is in the read
// buffer. A connection that parks gives its buffers back first and takes
// them again once bytes came (see parkState).
func (c *serverConn) awaitByte() error {
	if c.park.raw != nil && !c.letGo() {
		c.stopParking()
	}
	if c.park.raw == nil {
		_, err := c.br.Peek(1)
		return err
	}
	if err := c.park.raw.Read(c.park.readFn); err != nil {
		return err
	}
	land, n, err := c.park.land, c.park.n, c.park.err
	c.park.land, c.park.err = nil, nil
	switch {
	case err != nil:
		c.m.landings.Put(land)
		return os.NewSyscallError("read", err)
	case n == 0:
		c.m.landings.Put(land)
		return io.EOF
	}
	c.m.stats.cxRxBytes.Add(uint64(n))
	c.src.fill(land, n, &c.m.landings)
	c.br = c.m.readers.Get().(*bufio.Reader)
	c.br.Reset(&c.src)
	_, err = c.br.Peek(1)
	return err
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
		// Under mu: cut reads it from another goroutine.
		c.mu.Lock()
		c.x = nil
		c.mu.Unlock()
		c.m.exchanges.Put(x)
	}
	return true
}

// parkedSource is what a connection's read buffer reads: the bytes a
// parked connection read into a landing buffer as it woke, then the
// socket.
type parkedSource struct {
	cc      *countedConn
	land    *[readBufferSize]byte
	pending []byte
	pool    *sync.Pool
}

// fill hands the n bytes read into land to the next reads; land goes
// back to pool once they are read.
func (s *parkedSource) fill(land *[readBufferSize]byte, n int, pool *sync.Pool) {
	s.land, s.pending, s.pool = land, land[:n], pool
}

// Read implements io.Reader.
func (s *parkedSource) Read(p []byte) (int, error) {
	if len(s.pending) == 0 {
		return s.cc.Read(p)
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	if len(s.pending) == 0 {
		s.pool.Put(s.land)
		s.land, s.pending = nil, nil
	}
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
