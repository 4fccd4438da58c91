package originaldst

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	odv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

func TestParseSockaddr(t *testing.T) {
	le := func(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
	in4 := []byte{2, 0, 0x1f, 0x90, 10, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0}
	in6 := make([]byte, 28)
	in6[0], in6[2], in6[3] = 10, 0x01, 0xbb
	a6 := netip.MustParseAddr("2001:db8::5").As16()
	copy(in6[8:], a6[:])
	mapped := make([]byte, 28)
	mapped[0], mapped[3] = 10, 80
	m := netip.MustParseAddr("::ffff:192.0.2.1").As16()
	copy(mapped[8:], m[:])
	tests := map[string]struct {
		in   []byte
		want netip.AddrPort
		ok   bool
	}{
		"IPv4":        {in4, netip.MustParseAddrPort("10.0.0.7:8080"), true},
		"IPv6":        {in6, netip.MustParseAddrPort("[2001:db8::5]:443"), true},
		"IPv4-mapped": {mapped, netip.MustParseAddrPort("192.0.2.1:80"), true},
		"short":       {in4[:6], netip.AddrPort{}, false},
		"short IPv6":  {in6[:20], netip.AddrPort{}, false},
		"AF_UNIX":     {[]byte{1, 0, 0, 0, 0, 0, 0, 0}, netip.AddrPort{}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := parseSockaddr(tc.in, le)
			if ok != tc.ok || got != tc.want {
				t.Errorf("parseSockaddr = %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestNotRedirectedKeepsAddress checks that a connection nothing
// redirected keeps its local address (the kernel has no original
// destination for it, or the same one).
func TestNotRedirectedKeepsAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	f, err := Factory{}.Compile(&odv3.OriginalDst{}, listenerfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	s := listenerfilter.NewSocket(sc)
	if err := f.OnAccept(s); err != nil {
		t.Fatal(err)
	}
	if s.Restored() || s.LocalAddr().String() != ln.Addr().String() {
		t.Errorf("local address %v (restored %v), want %v unchanged", s.LocalAddr(), s.Restored(), ln.Addr())
	}
}
