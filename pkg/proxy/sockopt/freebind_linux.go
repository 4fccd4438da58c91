package sockopt

import "golang.org/x/sys/unix"

// Freebind is the option a listener's or bind config's freebind sets:
// IP_FREEBIND, or IPV6_FREEBIND for an IPv6 socket, so that the socket can
// bind an address the host does not have (yet).
func Freebind(ipv6 bool) (Option, error) {
	if ipv6 {
		return Option{Level: unix.SOL_IPV6, Name: unix.IPV6_FREEBIND, Int: 1}, nil
	}
	return Option{Level: unix.SOL_IP, Name: unix.IP_FREEBIND, Int: 1}, nil
}
