package proxyprotocol

import (
	"net/netip"
	"testing"
)

// FuzzParse checks that no input makes the parser panic, and that what it
// reports is consistent: a header it accepts fits in the input, a request
// for more bytes asks for more than it has.
func FuzzParse(f *testing.F) {
	f.Add([]byte("PROXY TCP4 203.0.113.7 198.51.100.1 51000 443\r\n"), false)
	f.Add([]byte("PROXY UNKNOWN\r\n"), true)
	f.Add(v2Header(0x21, 0x11, inet4Block(src4, dst4, 0x01, 0x00, 0x01, 'x')), false)
	f.Add(v2Header(0x21, 0x21, inet6Block(src6, dst6)), true)
	f.Add(v2Header(0x20, 0x00, nil), false)
	f.Add([]byte("GET / HTTP/1.1\r\n"), true)
	f.Fuzz(func(t *testing.T, b []byte, allowMissing bool) {
		p := parser{allowMissing: allowMissing, allowV1: true, allowV2: true}
		r := p.parse(b)
		switch r.outcome {
		case done:
			if r.length > len(b) {
				t.Fatalf("header length %d beyond the %d bytes seen", r.length, len(b))
			}
			if r.version != 0 && !r.keep && (!r.src.IsValid() || !r.dst.IsValid() || r.src.Addr() == (netip.Addr{})) {
				t.Fatalf("header without addresses: %+v", r)
			}
		case needMore:
			if r.need <= len(b) || r.need > v2HeaderLen+0xffff {
				t.Fatalf("asks for %d bytes with %d seen", r.need, len(b))
			}
		}
	})
}
