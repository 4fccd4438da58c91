package upstream

import (
	"bufio"
	"net"
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
}
