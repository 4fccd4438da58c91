package httpconn

import (
	"bufio"
	"bytes"
)

// A busy keep-alive HTTP/1 connection serves its requests inside the
// wait for them, so that after a response it waits for the next request
// without first reading the socket, a read that nearly always finds
// nothing (the client cannot have sent its next request yet).
//
// Go's netpoller is edge-triggered, and a socket's RawConn.Read (like
// its Read) clears the poller's record of an edge before it calls its
// function: an edge the netpoller took before the call is forgotten, so
// its first call must read. A connection that went back to the poller
// after each response would thus lose whatever the client sent during
// the exchange (a pipelined request, its close). So the connection stays
// inside one RawConn.Read: its function reads the request, serves it,
// writes the response and returns false to wait for the next one, and
// any edge since the read is still recorded, the wait returning at once.
//
// The wait may skip the read only when the socket held nothing, not even
// the client's end, after the last read: a short read does not tell,
// since a read that returns bytes also takes a FIN queued behind them
// without a sign. TCP_INQ does tell: each read (recvmsg) then carries how
// much the socket still holds, and 1 when only its end is left (see
// inqReader). Asking for it costs a setsockopt, paid by a connection
// once its first request leaves it open, so that a connection that
// closes after one request pays nothing.
//
// Inside RawConn.Read the socket's read lock is held: nothing may read
// it through the net.Conn meanwhile (the read would wait for the lock
// for ever), nor close it from this goroutine (Close waits for the
// function to return). So only a request whose head, and body if any,
// came whole is served inline, its reads going straight to the socket
// without waiting; an upgrade, a CONNECT, a chunked body or one still to
// come, Expect: 100-continue and an incomplete head leave the wait and
// are served as before. cut, from another goroutine, fails the
// connection's reads and writes before closing it, so that its Close
// does not wait for the exchange (see cut).

// What the requests served inline came to (parkState.outcome).
const (
	// inlineArrived: nothing was served; the next request's first byte
	// is in the read buffer.
	inlineArrived = iota
	// inlineServed: the last request served inline left the connection
	// open but unable to go on inline; the connection waits again.
	inlineServed
	// inlineHeadRead: the next request's head was read and its
	// forwarding is left to forwardRequest.
	inlineHeadRead
	// inlineEnded: the connection ends.
	inlineEnded
)

// startInline lets a connection that parks serve its next requests
// inline, once the socket reads with TCP_INQ.
func (c *serverConn) startInline() {
	p := &c.park
	if p.inqTried || p.raw == nil {
		return
	}
	p.inqTried = true
	if enableInq(p.raw) {
		p.inline = true
		c.src.inq = &inqReader{}
	}
}

// serveInline serves, inside the socket's wait, the request whose first
// byte arrived, as serveHTTP1 would, and prepares the wait for the next
// one; it returns false when the connection leaves the wait instead
// (outcome says why).
func (c *serverConn) serveInline() bool {
	p := &c.park
	if !headBuffered(c.br) {
		return false
	}
	if !c.arriveInline() {
		p.outcome = inlineEnded
		return false
	}
	// The request's reads do not wait: all of it is buffered.
	c.src.direct = true
	keep, done := c.readRequest()
	if !done && !c.forwardableInline() {
		c.src.direct = false
		c.setInlining(false)
		p.outcome = inlineHeadRead
		return false
	}
	if !done {
		keep = c.forwardRequest()
	}
	c.src.direct = false
	switch {
	case !c.afterRequest(keep):
		p.outcome = inlineEnded
	case c.x.st.leaked:
		// An upstream transport may still read the body from the
		// buffers, which the connection may then not let go.
		p.outcome = inlineServed
	case !c.beginWait():
		p.outcome = inlineEnded
		return false
	default:
		if c.br.Buffered() == 0 {
			c.armWait()
		}
		return true
	}
	c.setInlining(false)
	return false
}

// forwardableInline reports whether the request readRequest read may be
// forwarded inline: neither an upgrade nor a CONNECT, no 100-continue,
// and a body, if any, buffered whole.
func (c *serverConn) forwardableInline() bool {
	req := &c.x.req
	if c.x.st.upg.typ != "" || req.Expect100 || req.Chunked {
		return false
	}
	return req.ContentLength <= int64(c.br.Buffered())
}

// headBuffered reports whether br holds a whole request head.
func headBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.Contains(b, []byte("\r\n\r\n"))
}

// arriveInline is setIdle(false) for a request served inline: it records
// that the connection serves inside its wait (for cut), and fails once
// the connection is cut.
func (c *serverConn) arriveInline() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cutting {
		return false
	}
	if !c.setIdleLocked(false) {
		return false
	}
	c.inlining = true
	return true
}

// setInlining records whether the connection serves inside its wait.
func (c *serverConn) setInlining(v bool) {
	c.mu.Lock()
	c.inlining = v
	c.mu.Unlock()
}
