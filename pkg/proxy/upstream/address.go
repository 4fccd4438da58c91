package upstream

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/userspace"
)

// AddressProto is a host's Address as the admin and load reports show
// it: a socket address, a pipe's path, or an internal listener's address
// ("envoy://listener/endpoint_id"). An address that is neither
// (never built here) is an empty Address.
func AddressProto(addr string) *corev3.Address {
	if IsPipe(addr) {
		return &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: addr}}}
	}
	if ia, ok := userspace.ParseAddr(addr); ok {
		return &corev3.Address{Address: &corev3.Address_EnvoyInternalAddress{EnvoyInternalAddress: &corev3.EnvoyInternalAddress{
			AddressNameSpecifier: &corev3.EnvoyInternalAddress_ServerListenerName{ServerListenerName: ia.Listener},
			EndpointId:           ia.EndpointID,
		}}}
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
