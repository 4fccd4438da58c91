package httpconn

import "net"

// peekState is what one non-blocking peek at a connection's socket saw.
type peekState uint8

const (
	// peekUnknown: the connection gives no access to its socket (or the
	// platform has no peek), so nothing is known.
	peekUnknown peekState = iota
	// peekBytes: bytes from the peer wait in the receive queue.
	peekBytes
	// peekEmpty: nothing waits, and the peer is still there.
	peekEmpty
	// peekEOF: the peer closed its side.
	peekEOF
	// peekFailed: the peer reset the connection, or the socket is closed
	// on this side.
	peekFailed
)

// socketOf is the connection whose socket a peek looks at: the dialed or
// accepted one under a wrapper that exposes it.
func socketOf(nc net.Conn) net.Conn {
	if inner, ok := nc.(interface{ NetConn() net.Conn }); ok {
		return inner.NetConn()
	}
	return nc
}

// peerGone reports whether the peer closed or reset the connection,
// without reading anything or waiting. Bytes waiting (a pipelined request,
// a body) mean the peer is still there. Where the socket cannot be seen, a
// client that leaves while its request is held is seen when the response
// is written.
func peerGone(nc net.Conn) bool {
	st := peek(socketOf(nc))
	return st == peekEOF || st == peekFailed
}

// inputPending reports whether bytes from the peer wait in the socket's
// receive queue, without reading them or waiting. Where the socket cannot
// be seen, new streams start as soon as the input read so far is handled.
func inputPending(nc net.Conn) bool {
	return peek(socketOf(nc)) == peekBytes
}
