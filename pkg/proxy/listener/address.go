package listener

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// socketAddress is one listening address of a listener, resolved from its
// configuration.
type socketAddress struct {
	// network is what net.Listen gets: "tcp4" for IPv4, "tcp6" for IPv6,
	// and "tcp" for "::" with ipv4_compat, which Go then binds dual-stack.
	// Plain "tcp" is never used otherwise: Go would make every wildcard
	// address dual-stack, where Envoy binds 0.0.0.0 to IPv4 only.
	network string
	addr    netip.AddrPort
}

// String renders the address as Envoy does: "127.0.0.1:80", "[::1]:80".
func (a socketAddress) String() string { return a.addr.String() }

// parseAddress resolves a listener address. Errors name the field below
// address.
func parseAddress(a *corev3.Address) (socketAddress, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return socketAddress{}, errors.New("socket_address: a socket address is required")
	}
	ip, err := netip.ParseAddr(sa.GetAddress())
	if err != nil {
		return socketAddress{}, fmt.Errorf("socket_address.address: %q is not an IP address (listeners bind IP addresses, not names)", sa.GetAddress())
	}
	if sa.GetPortValue() > 65535 {
		return socketAddress{}, fmt.Errorf("socket_address.port_value: %d is not a port (0 to 65535)", sa.GetPortValue())
	}
	network := "tcp4"
	switch {
	case sa.GetIpv4Compat() && ip == netip.IPv6Unspecified():
		network = "tcp"
	case sa.GetIpv4Compat() && ip.Is4In6():
		// An IPv4-mapped address accepts exactly that IPv4 address.
		ip = ip.Unmap()
	case sa.GetIpv4Compat():
		return socketAddress{}, fmt.Errorf("socket_address.ipv4_compat: only the IPv6 address \"::\" or an IPv4-mapped IPv6 address can set it, not %q", sa.GetAddress())
	case ip.Is6():
		network = "tcp6"
	}
	if sa.GetProtocol() == corev3.SocketAddress_UDP {
		network = udpNetwork(network)
	}
	return socketAddress{network: network, addr: netip.AddrPortFrom(ip, uint16(sa.GetPortValue()))}, nil
}

// AddressString renders a socket address as host:port ("[::1]:80" for IPv6).
func AddressString(sa *corev3.SocketAddress) string {
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
}

// ProtoAddress returns a bound TCP address as the admin's messages show it:
// the IP (IPv4-mapped addresses unmapped) and the port.
func ProtoAddress(a net.Addr) *corev3.Address {
	ap := addrPort(a)
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       ap.Addr().String(),
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(ap.Port())},
	}}}
}

// addrPort converts a TCP or UDP address to netip form, IPv4-mapped addresses
// unmapped so that they match IPv4 prefixes; anything else is the zero
// value.
func addrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// StatScope returns the stat scope Build gives lc, "listener.<name>." (see
// statScopeName; "listener.envoy_internal_<listener name>." for an
// internal listener without stat_prefix), for what is built before the listener and counts under
// it, such as its connection managers' per-listener stats. It is "" for an
// address Build refuses.
func StatScope(lc *listenerv3.Listener) string {
	if lc.GetInternalListener() != nil && lc.GetStatPrefix() == "" {
		// Envoy's name for an internal listener's stats.
		return "listener.envoy_internal_" + lc.GetName() + "."
	}
	a, err := parseAddress(lc.GetAddress())
	if err != nil && lc.GetStatPrefix() == "" {
		return ""
	}
	return statScopeName(lc.GetStatPrefix(), a)
}

// statScopeName is the listener's stat scope, "listener.<name>.": the
// listener's stat_prefix, or else its configured address (the configured
// port, so 0 for an OS-chosen one, as Envoy names it) with ':' replaced by
// '_', as Envoy sanitises stat names: "listener.127.0.0.1_10000.",
// "listener.[__1]_10000.".
func statScopeName(statPrefix string, a socketAddress) string {
	name := statPrefix
	if name == "" {
		name = strings.ReplaceAll(a.String(), ":", "_")
	}
	return "listener." + name + "."
}
