//go:build !unix

package httpconn

import "net"

// peek cannot look at a socket on this platform.
func peek(net.Conn) peekState { return peekUnknown }
