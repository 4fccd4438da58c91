package sockopt

import "golang.org/x/sys/unix"

// Transparent is the option an original_src upstream socket takes so that
// it can bind an address the host does not have (the downstream's), and a
// listener's transparent: true so that it can accept connections to
// addresses that are not the host's (TPROXY): IP_TRANSPARENT, or
// IPV6_TRANSPARENT for an IPv6 socket, as Envoy's transparent socket
// options. Setting it needs CAP_NET_ADMIN.
func Transparent(ipv6 bool) (Option, error) {
	if ipv6 {
		return Option{Level: unix.SOL_IPV6, Name: unix.IPV6_TRANSPARENT, Int: 1}, nil
	}
	return Option{Level: unix.SOL_IP, Name: unix.IP_TRANSPARENT, Int: 1}, nil
}

// Mark is SO_MARK with value m, the mark an original_src upstream socket
// carries for policy routing. Setting it needs CAP_NET_ADMIN.
func Mark(m uint32) (Option, error) {
	return Option{Level: unix.SOL_SOCKET, Name: unix.SO_MARK, Int: int(int32(m))}, nil
}
