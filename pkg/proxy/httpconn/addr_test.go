package httpconn

import (
	"net"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// TestAddrStringsMatchString checks that addrStrings renders addresses as
// their String methods do, which the access-log fields
// (%DOWNSTREAM_LOCAL_ADDRESS% and the like) and the headers showed before
// it: IPv4, IPv4-mapped IPv6 (a dual-stack listener's IPv4 clients), IPv6,
// a zone, an address longer than its stack buffer, a unix socket, none.
func TestAddrStringsMatchString(t *testing.T) {
	long := &net.TCPAddr{IP: net.ParseIP("fe80::1234:5678:9abc:def0"), Port: 65535, Zone: "a-rather-long-interface-name"}
	addrs := []net.Addr{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1).To4(), Port: 10000},
		&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 443}, // 16-byte form
		&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 8080},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"},
		long,
		&net.UnixAddr{Name: "/run/sock", Net: "unix"},
		nil,
	}
	for _, a := range addrs {
		for _, b := range addrs {
			gotA, gotB := addrStrings(a, b)
			if wantA, wantB := accesslog.AddressString(a), accesslog.AddressString(b); gotA != wantA || gotB != wantB {
				t.Errorf("addrStrings(%v, %v) = %q, %q; want %q, %q", a, b, gotA, gotB, wantA, wantB)
			}
		}
	}
}
