package proxyprotocol

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// v2Header encodes a v2 header: version/command byte, family/transport
// byte, then the address block (addresses, ports, TLVs) as given.
func v2Header(verCmd, famTrans byte, block []byte) []byte {
	b := append([]byte(v2Signature), verCmd, famTrans, 0, 0)
	binary.BigEndian.PutUint16(b[14:], uint16(len(block)))
	return append(b, block...)
}

// inet4Block is the address block of a TCP over IPv4 header.
func inet4Block(src, dst netip.AddrPort, tlvs ...byte) []byte {
	s, d := src.Addr().As4(), dst.Addr().As4()
	b := append(append([]byte{}, s[:]...), d[:]...)
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	return append(b, tlvs...)
}

// inet6Block is the address block of a TCP over IPv6 header.
func inet6Block(src, dst netip.AddrPort) []byte {
	s, d := src.Addr().As16(), dst.Addr().As16()
	b := append(append([]byte{}, s[:]...), d[:]...)
	b = binary.BigEndian.AppendUint16(b, src.Port())
	return binary.BigEndian.AppendUint16(b, dst.Port())
}

var (
	src4 = netip.MustParseAddrPort("203.0.113.7:51000")
	dst4 = netip.MustParseAddrPort("198.51.100.1:443")
	src6 = netip.MustParseAddrPort("[2001:db8::7]:51000")
	dst6 = netip.MustParseAddrPort("[2001:db8::1]:443")
)

func TestParse(t *testing.T) {
	all := parser{allowV1: true, allowV2: true}
	tests := map[string]struct {
		p        parser
		in       []byte
		outcome  outcome
		version  int
		length   int
		keep     bool
		src, dst netip.AddrPort
	}{
		"v1 TCP4":                         {p: all, in: []byte("PROXY TCP4 203.0.113.7 198.51.100.1 51000 443\r\nGET"), outcome: done, version: 1, length: 47, src: src4, dst: dst4},
		"v1 TCP6":                         {p: all, in: []byte("PROXY TCP6 2001:db8::7 2001:db8::1 51000 443\r\n"), outcome: done, version: 1, length: 46, src: src6, dst: dst6},
		"v1 UNKNOWN keeps the addresses":  {p: all, in: []byte("PROXY UNKNOWN\r\n"), outcome: done, version: 1, length: 15, keep: true},
		"v1 UNKNOWN with addresses":       {p: all, in: []byte("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"), outcome: done, version: 1, length: 35, keep: true},
		"v1 incomplete":                   {p: all, in: []byte("PROXY TCP4 203.0.113.7 "), outcome: needMore},
		"v1 family mismatch":              {p: all, in: []byte("PROXY TCP4 2001:db8::7 2001:db8::1 51000 443\r\n"), outcome: malformed, version: 1},
		"v1 bad port":                     {p: all, in: []byte("PROXY TCP4 203.0.113.7 198.51.100.1 70000 443\r\n"), outcome: malformed, version: 1},
		"v1 double space":                 {p: all, in: []byte("PROXY  TCP4 203.0.113.7 198.51.100.1 1 443\r\n"), outcome: malformed, version: 1},
		"v1 unknown protocol":             {p: all, in: []byte("PROXY UDP4 203.0.113.7 198.51.100.1 1 443\r\n"), outcome: malformed, version: 1},
		"v1 missing fields":               {p: all, in: []byte("PROXY TCP4 203.0.113.7 198.51.100.1 1\r\n"), outcome: malformed, version: 1},
		"v1 multicast source":             {p: all, in: []byte("PROXY TCP4 224.0.0.1 198.51.100.1 1 443\r\n"), outcome: malformed, version: 1},
		"v1 unspecified destination":      {p: all, in: []byte("PROXY TCP6 2001:db8::7 :: 1 443\r\n"), outcome: malformed, version: 1},
		"v1 line too long":                {p: all, in: append([]byte("PROXY TCP4 "), make([]byte, 120)...), outcome: malformed},
		"v1 disallowed":                   {p: parser{allowV2: true}, in: []byte("PROXY UNKNOWN\r\n"), outcome: denied, version: 1},
		"not a header":                    {p: all, in: []byte("GET / HTTP/1.1\r\nHost: x\r\n"), outcome: malformed},
		"short garbage with CRLF":         {p: all, in: []byte("GET\r\n"), outcome: malformed, version: 1},
		"not a header, allowed":           {p: parser{allowMissing: true, allowV1: true, allowV2: true}, in: []byte("GET / HTTP/1.1\r\n"), outcome: done},
		"allowed, a v1 prefix waits":      {p: parser{allowMissing: true, allowV1: true, allowV2: true}, in: []byte("PROX"), outcome: needMore},
		"allowed, v1 disallowed, passes":  {p: parser{allowMissing: true, allowV2: true}, in: []byte("PROXY UNKNOWN\r\n"), outcome: done},
		"v2 signature start waits":        {p: all, in: []byte("\r\n\r\n"), outcome: needMore},
		"v2 TCP4":                         {p: all, in: v2Header(0x21, 0x11, inet4Block(src4, dst4)), outcome: done, version: 2, length: 28, src: src4, dst: dst4},
		"v2 UDP4 is taken as TCP4":        {p: all, in: v2Header(0x21, 0x12, inet4Block(src4, dst4)), outcome: done, version: 2, length: 28, src: src4, dst: dst4},
		"v2 TCP6":                         {p: all, in: v2Header(0x21, 0x21, inet6Block(src6, dst6)), outcome: done, version: 2, length: 52, src: src6, dst: dst6},
		"v2 TCP4 with TLVs":               {p: all, in: v2Header(0x21, 0x11, inet4Block(src4, dst4, 0x01, 0x00, 0x02, 'h', '2', 0x04, 0x00, 0x00)), outcome: done, version: 2, length: 36, src: src4, dst: dst4},
		"v2 truncated TLV":                {p: all, in: v2Header(0x21, 0x11, inet4Block(src4, dst4, 0x01, 0x00, 0x05, 'h')), outcome: malformed, version: 2},
		"v2 LOCAL keeps the addresses":    {p: all, in: v2Header(0x20, 0x00, nil), outcome: done, version: 2, length: 16, keep: true},
		"v2 LOCAL skips its block":        {p: all, in: v2Header(0x20, 0x11, inet4Block(src4, dst4)), outcome: done, version: 2, length: 28, keep: true},
		"v2 UNSPEC with PROXY is refused": {p: all, in: v2Header(0x21, 0x00, nil), outcome: malformed, version: 2},
		"v2 AF_UNIX is refused":           {p: all, in: v2Header(0x21, 0x31, make([]byte, 216)), outcome: malformed, version: 2},
		"v2 bad version":                  {p: all, in: v2Header(0x11, 0x11, inet4Block(src4, dst4)), outcome: malformed, version: 2},
		"v2 bad command":                  {p: all, in: v2Header(0x22, 0x11, inet4Block(src4, dst4)), outcome: malformed, version: 2},
		"v2 unspecified transport":        {p: all, in: v2Header(0x21, 0x10, inet4Block(src4, dst4)), outcome: malformed, version: 2},
		"v2 short address block":          {p: all, in: v2Header(0x21, 0x11, make([]byte, 8)), outcome: malformed, version: 2},
		"v2 incomplete":                   {p: all, in: v2Header(0x21, 0x11, inet4Block(src4, dst4))[:20], outcome: needMore, version: 2},
		"v2 broadcast destination":        {p: all, in: v2Header(0x21, 0x11, inet4Block(src4, netip.MustParseAddrPort("255.255.255.255:1"))), outcome: malformed, version: 2},
		"v2 disallowed":                   {p: parser{allowV1: true}, in: v2Header(0x20, 0x00, nil), outcome: denied, version: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := tc.p.parse(tc.in)
			if r.outcome != tc.outcome || r.version != tc.version {
				t.Fatalf("outcome %d version %d, want %d version %d", r.outcome, r.version, tc.outcome, tc.version)
			}
			if r.outcome != done {
				return
			}
			if r.length != tc.length || r.keep != tc.keep || r.src != tc.src || r.dst != tc.dst {
				t.Errorf("got length %d keep %v %v -> %v, want length %d keep %v %v -> %v", r.length, r.keep, r.src, r.dst, tc.length, tc.keep, tc.src, tc.dst)
			}
		})
	}
}

// TestParseNeedsWholeV2Block checks that a v2 header longer than the first
// peek asks for all of its bytes.
func TestParseNeedsWholeV2Block(t *testing.T) {
	tlv := append([]byte{0xe0, 0x01, 0x00}, make([]byte, 256)...)
	h := v2Header(0x21, 0x11, inet4Block(src4, dst4, tlv...))
	p := parser{allowV1: true, allowV2: true}
	if r := p.parse(h[:firstPeek]); r.outcome != needMore || r.need != len(h) {
		t.Fatalf("outcome %d need %d, want needMore %d", r.outcome, r.need, len(h))
	}
	if r := p.parse(h); r.outcome != done || r.length != len(h) {
		t.Fatalf("outcome %d length %d, want done %d", r.outcome, r.length, len(h))
	}
}
