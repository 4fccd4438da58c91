//go:build !linux

package listenerfilter

import "net"

// WatchPeerClose is not available off Linux: a held connection learns of
// its peer's close only when it is read.
func WatchPeerClose(net.Conn, func()) (stop func()) { return func() {} }
