package originaldst

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// ip6tSoOriginalDst is IP6T_SO_ORIGINAL_DST, the IPv6 twin of
// SO_ORIGINAL_DST (same value, level SOL_IPV6).
const ip6tSoOriginalDst = 80

// originalDst asks the kernel for the original destination of c (its
// conntrack entry's); false when it has none (no redirection tracked, not
// a TCP socket).
func originalDst(c net.Conn, v6 bool) (netip.AddrPort, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return netip.AddrPort{}, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, false
	}
	var b []byte
	_ = raw.Control(func(fd uintptr) {
		// An IPv4 connection on a dual-stack socket answers at the
		// other level: try both, the connection's family first.
		if b = getOriginalDst(int(fd), v6); b == nil {
			b = getOriginalDst(int(fd), !v6)
		}
	})
	if b == nil {
		return netip.AddrPort{}, false
	}
	return parseSockaddr(b, func(b []byte) uint16 { return binary.NativeEndian.Uint16(b) })
}

// getOriginalDst returns the raw sockaddr of the original destination, or
// nil. x/sys has no getsockopt of raw bytes: the IPv4 answer (a 16-byte
// sockaddr_in) fits an IPv6Mreq's address, the IPv6 one (a 28-byte
// sockaddr_in6) is the head of an IPv6MTUInfo.
func getOriginalDst(fd int, v6 bool) []byte {
	if !v6 {
		m, err := unix.GetsockoptIPv6Mreq(fd, unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			return nil
		}
		return m.Multiaddr[:]
	}
	info, err := unix.GetsockoptIPv6MTUInfo(fd, unix.SOL_IPV6, ip6tSoOriginalDst)
	if err != nil {
		return nil
	}
	b := make([]byte, 24)
	binary.NativeEndian.PutUint16(b[0:], info.Addr.Family)
	binary.NativeEndian.PutUint16(b[2:], info.Addr.Port) // the bytes stay in network order
	copy(b[8:], info.Addr.Addr[:])
	return b
}
