// Package originaldst is the listener filter
// envoy.filters.listener.original_dst: on Linux, a connection redirected to
// the listener by iptables (REDIRECT, TPROXY-less DNAT) gets the address it
// was originally sent to, read with SO_ORIGINAL_DST (IP6T_SO_ORIGINAL_DST
// for IPv6), as its local address; the filter chain match
// (destination_port, prefix_ranges) and the access logs then see it. A
// connection that was not redirected keeps its address.
package originaldst

import (
	"fmt"
	"net"
	"net/netip"

	odv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.listener.original_dst"

// Factory compiles the filter's (empty) configuration.
type Factory struct{}

// Compile builds the filter.
func (Factory) Compile(config proto.Message, _ listenerfilter.Context) (listenerfilter.Filter, error) {
	if _, ok := config.(*odv3.OriginalDst); !ok {
		return nil, fmt.Errorf("original_dst: unexpected configuration %T", config)
	}
	return filter{}, nil
}

// filter restores the original destination of redirected connections.
type filter struct{}

// OnAccept sets the connection's local address to its original
// destination when the kernel has one; it never refuses a connection.
func (filter) OnAccept(s *listenerfilter.Socket) error {
	local, ok := s.LocalAddr().(*net.TCPAddr)
	if !ok {
		return nil
	}
	la := local.AddrPort()
	dst, ok := originalDst(s.NetConn(), la.Addr().Is6() && !la.Addr().Is4In6())
	if ok && dst != la {
		s.SetLocalAddr(net.TCPAddrFromAddrPort(dst))
	}
	return nil
}

// parseSockaddr reads a struct sockaddr_in or sockaddr_in6 as the kernel
// returns it (family in host order, port and address in network order).
func parseSockaddr(b []byte, family func([]byte) uint16) (netip.AddrPort, bool) {
	if len(b) < 8 {
		return netip.AddrPort{}, false
	}
	port := uint16(b[2])<<8 | uint16(b[3])
	switch family(b) {
	case afInet:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), true
	case afInet6:
		if len(b) < 24 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port), true
	}
	return netip.AddrPort{}, false
}

// The address families of struct sockaddr (Linux's values).
const (
	afInet  = 2
	afInet6 = 10
)
