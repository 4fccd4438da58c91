package upstream

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// AddressProto is a host's Address as the admin and load reports show
// it: a socket address, or a pipe's path. An address that is neither
// (never built here) is an empty Address.
func AddressProto(addr string) *corev3.Address {
	if IsPipe(addr) {
		return &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: addr}}}
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return &corev3.Address{}
	}
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       ap.Addr().String(),
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(ap.Port())},
	}}}
}
