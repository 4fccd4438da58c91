//go:build !unix

package httpconn

import "net"

// peerGone cannot look at the socket here: a client that leaves while
// its request is held is seen when the response is written.
func peerGone(net.Conn) bool { return false }
