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
// An HTTP/1 connection that the idle sweep watches (idleset.go) and that
// served more than one request keeps its buffers through the first part
// of its wait (parkState.hold): the sweep moves it to the idle set,
// letting them go, once it has waited through a whole sweep period, and
// a wait that wakes early for any other reason (a deadline) lets them go
// from then on. A busy connection, whose next request comes within the
// period, thus pays no pool put and get per request, and an idle one
// holds no buffer once swept, as before. A connection's first wait after
// its first request does not hold: connections opened for one request
// and kept idle (many clients at once) would otherwise each hold buffers
// until the sweep, all of which the pools would then keep.
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
	// in err what its read met, and in outcome what the requests it
	// served inline came to (see inline.go).
	readFn  func(fd uintptr) bool
	err     error
	outcome int
	// inline: the connection serves its requests inside the wait (see
	// inline.go); inqTried records that it asked for TCP_INQ, once.
	inline, inqTried bool
	// hold: the connection keeps its buffers while it waits, until the
	// sweep moves it to the idle set or the wait wakes early (set by
	// startWait for a connection the sweep watches, from its second
	// request on).
	hold bool
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

// readOrPark is raw.Read's attempt, made first and after each wake-up:
// a read into the read buffer that does not wait, the connection parking
// when it finds nothing (raw.Read then waits for the socket). A
// connection that serves inline serves the request that arrived, and
// those after it, from here (see inline.go).
func (c *serverConn) readOrPark(fd uintptr) bool {
	p := &c.park
	for {
		if c.br == nil {
			c.takeReader()
		}
		c.src.fd, c.src.direct = fd, true
		_, err := c.br.Peek(1)
		c.src.direct = false
		if errors.Is(err, errWouldBlock) {
			if !p.hold {
				c.letGo()
			}
			return false
		}
		if err != nil || !p.inline {
			p.err = err
			return true
		}
		if !c.serveInline() {
			return true
		}
		if c.br.Buffered() == 0 && c.src.empty {
			// Nothing can be in the socket that the wait would not
			// report: wait without the read that would find nothing.
			if !p.hold {
				c.letGo()
			}
			return false
		}
	}
}

// awaitByte waits until the next request's first byte is in the read
// buffer; a connection that parks lets its buffers go meanwhile (see
// parkState).
func (c *serverConn) awaitByte() error {
	if c.park.raw == nil {
		_, err := c.br.Peek(1)
		return err
	}
	c.park.outcome = inlineArrived
	c.src.empty = false
	err := c.park.raw.Read(c.park.readFn)
	readErr := c.park.err
	c.park.err = nil
	if err != nil {
		// The deadline, or the connection closed; parked or not.
		return err
	}
	return readErr
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
	// inq, once the connection serves inline, reads with TCP_INQ; empty
	// records that its last read left the socket empty and not ended.
	inq   *inqReader
	empty bool
}

// Read implements io.Reader.
func (s *connSource) Read(p []byte) (int, error) {
	if !s.direct {
		return s.cc.Read(p)
	}
	var (
		n          int
		wouldBlock bool
		err        error
	)
	if s.inq != nil {
		var rest bool
		n, wouldBlock, rest, err = s.inq.read(s.fd, p)
		s.empty = !rest
	} else {
		n, wouldBlock, err = readSocket(s.fd, p)
	}
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
