//go:build !linux

package originaldst

import (
	"net"
	"net/netip"
)

// originalDst has no source off Linux: connections keep their address.
func originalDst(net.Conn, bool) (netip.AddrPort, bool) { return netip.AddrPort{}, false }
