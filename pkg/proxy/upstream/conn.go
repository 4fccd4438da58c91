package upstream

import (
	"bufio"
	"net"
	"syscall"
)

// Conn is one HTTP/1.1 upstream connection lent by a cluster's pool to the
// connection manager for one request at a time.
type Conn struct {
	net.Conn
	// Host is the host the connection goes to.
	Host *Host
	// R buffers what the upstream sends; it lives as long as the
	// connection, so a reused connection keeps bytes already read.
	R *bufio.Reader
	// Requests counts the requests sent on the connection so far.
	Requests uint32
	// Answered is set by the connection manager once the response to the
	// current request was read whole; the pool clears it at each loan.
	// A connection released unusable before that counts in
	// upstream_cx_destroy_with_active_rq, as Envoy counts a connection
	// that closes with a request on it.
	Answered bool
	// LocalAddress is the connection's local address as the access log
	// shows it (%UPSTREAM_LOCAL_ADDRESS%), "" until the connection
	// manager formats it on the connection's first request and keeps it
	// for the next ones.
	LocalAddress string
	// Buffers lends R while a response is read, nil where R stays for
	// the whole loan (see ReadBuffers).
	Buffers ReadBuffers
	// Raw is the connection's socket as the connection manager waits on
	// it for a response (see httpconn's responseWait), made on the
	// connection's first such wait and kept for the next ones; nil until
	// then, and for a connection that is not plain TCP.
	Raw syscall.RawConn
}

// ReadBuffers lends a connection its read buffer (Conn.R) for the time a
// response is read: the connection manager gives back the empty buffer of
// a connection it waits on for a response, and takes one when the response
// is readable, so that the connections waiting hold none. The buffer it
// takes may be larger than the one lent with the connection: a response
// head and a 16 KiB body come in one read.
type ReadBuffers interface {
	// ResponseReader returns a read buffer reading the connection.
	ResponseReader() *bufio.Reader
	// PutReader takes back a read buffer with nothing buffered.
	PutReader(r *bufio.Reader)
}
