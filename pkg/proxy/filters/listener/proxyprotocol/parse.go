package proxyprotocol

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strconv"
	"strings"
)

// The wire format of the PROXY protocol (HAProxy's proxy-protocol.txt), with
// the limits Envoy applies.
const (
	v1Signature = "PROXY "
	v2Signature = "\r\n\r\n\x00\r\nQUIT\n"
	// v2HeaderLen is the fixed part of a v2 header: signature, version and
	// command, family and transport, length.
	v2HeaderLen = 16
	// maxV1Len bounds the search for a v1 line's CRLF (Envoy's 108).
	maxV1Len = 108
	// firstPeek is how much the filter looks at first: the fixed part of
	// a v2 header and its largest address block (AF_UNIX's 216 bytes).
	firstPeek = v2HeaderLen + 216

	v2Version     = 0x2
	v2CmdLocal    = 0x0
	v2CmdProxy    = 0x1
	v2FamilyInet  = 0x1
	v2FamilyInet6 = 0x2
	v2TransStream = 0x1
	v2TransDgram  = 0x2
	v2AddrLenInet = 12
	v2AddrLenIn6  = 36
)

// outcome is what the bytes seen so far say.
type outcome uint8

const (
	// needMore: the header is not complete yet (result.need says how many
	// bytes to wait for).
	needMore outcome = iota
	// done: a whole header (result.version 1 or 2), or, with
	// allow_requests_without_proxy_protocol, bytes that cannot start one
	// (result.version 0).
	done
	// malformed: a header that cannot be parsed, or (version 0) bytes that
	// are not a PROXY protocol header.
	malformed
	// denied: a header of a version in disallowed_versions.
	denied
)

// result is the parse of a connection's first bytes.
type result struct {
	outcome outcome
	// version is 1 or 2 once the header's version is known, else 0.
	version int
	// need is, with needMore, the number of bytes to wait for.
	need int
	// length is the whole header's length, to consume.
	length int
	// keep is set for headers that say to use the connection's own
	// addresses (v1 UNKNOWN, v2 LOCAL); otherwise src and dst are the
	// client's and the original destination.
	keep     bool
	src, dst netip.AddrPort
	// tlvs is a v2 PROXY header's TLV block, checked well-formed.
	tlvs []byte
}

// parser holds the configuration that parsing depends on.
type parser struct {
	allowMissing     bool
	allowV1, allowV2 bool
}

// parse reads a PROXY protocol header from the start of b, the bytes the
// connection has sent so far, the way Envoy's filter reads it.
func (p parser) parse(b []byte) result {
	if p.allowMissing {
		v2 := p.allowV2 && bytes.HasPrefix([]byte(v2Signature), b[:min(len(b), len(v2Signature))])
		v1 := p.allowV1 && strings.HasPrefix(v1Signature, string(b[:min(len(b), len(v1Signature))]))
		if !v1 && !v2 {
			return result{outcome: done}
		}
	}
	if len(b) >= v2HeaderLen {
		switch {
		case string(b[:len(v2Signature)]) == v2Signature:
			return p.parseV2(b)
		case string(b[:len(v1Signature)]) != v1Signature:
			return result{outcome: malformed}
		}
	}
	// A v1 line ends with CRLF; "\r\n" at the very start may be a v2
	// signature still arriving.
	end := -1
	for i := 1; i < len(b); i++ {
		if b[i] == '\n' && b[i-1] == '\r' {
			if i > 1 {
				end = i + 1
			}
			break
		}
	}
	switch {
	case end > maxV1Len:
		return result{outcome: malformed, version: 1}
	case end < 0 && len(b) > maxV1Len:
		return result{outcome: malformed}
	case end < 0:
		return result{outcome: needMore, need: len(b) + 1}
	case !p.allowV1:
		return result{outcome: denied, version: 1}
	}
	r, ok := parseV1(b[:end])
	if !ok {
		return result{outcome: malformed, version: 1}
	}
	return r
}

// parseV1 parses a v1 line, CRLF included: "PROXY TCP4|TCP6 src dst sport
// dport", or "PROXY UNKNOWN ..." (the connection's own addresses).
func parseV1(line []byte) (result, bool) {
	r := result{outcome: done, version: 1, length: len(line), keep: true}
	parts := strings.Split(strings.TrimRight(string(line), " \t\r\n\v\f"), " ")
	if len(parts) < 2 || parts[0] != "PROXY" {
		return r, false
	}
	if parts[1] == "UNKNOWN" {
		return r, true
	}
	if len(parts) != 6 {
		return r, false
	}
	var want4 bool
	switch parts[1] {
	case "TCP4":
		want4 = true
	case "TCP6":
	default:
		return r, false
	}
	src, ok1 := v1Address(parts[2], parts[4], want4)
	dst, ok2 := v1Address(parts[3], parts[5], want4)
	if !ok1 || !ok2 || !unicast(src.Addr()) || !unicast(dst.Addr()) {
		return r, false
	}
	r.keep, r.src, r.dst = false, src, dst
	return r, true
}

// v1Address parses a v1 address and port of the family the line names.
func v1Address(ip, port string, want4 bool) (netip.AddrPort, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Zone() != "" || a.Is4() != want4 {
		return netip.AddrPort{}, false
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a, uint16(p)), true
}

// parseV2 parses a v2 header whose signature b starts with.
func (p parser) parseV2(b []byte) result {
	bad := result{outcome: malformed, version: 2}
	if !p.allowV2 {
		return result{outcome: denied, version: 2}
	}
	verCmd, famTrans := b[12], b[13]
	if verCmd>>4 != v2Version {
		return bad
	}
	cmd := verCmd & 0xf
	addrLen := 0
	if cmd != v2CmdLocal {
		switch famTrans >> 4 {
		case v2FamilyInet:
			addrLen = v2AddrLenInet
		case v2FamilyInet6:
			addrLen = v2AddrLenIn6
		default:
			return bad // AF_UNSPEC, AF_UNIX and the rest: refused, as Envoy does
		}
	}
	blockLen := int(binary.BigEndian.Uint16(b[14:16]))
	if blockLen < addrLen {
		return bad
	}
	whole := v2HeaderLen + blockLen
	if len(b) < whole {
		return result{outcome: needMore, version: 2, need: whole}
	}
	r := result{outcome: done, version: 2, length: whole, keep: true}
	if cmd == v2CmdLocal {
		// A health check of the balancer's own: the connection's
		// addresses stay, and the block is skipped unread.
		return r
	}
	if cmd != v2CmdProxy {
		return bad
	}
	if t := famTrans & 0xf; t != v2TransStream && t != v2TransDgram {
		return bad
	}
	a := b[v2HeaderLen:]
	if addrLen == v2AddrLenInet {
		r.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[0:4])), binary.BigEndian.Uint16(a[8:10]))
		r.dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[4:8])), binary.BigEndian.Uint16(a[10:12]))
	} else {
		r.src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(a[0:16])), binary.BigEndian.Uint16(a[32:34]))
		r.dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(a[16:32])), binary.BigEndian.Uint16(a[34:36]))
	}
	r.tlvs = b[v2HeaderLen+addrLen : whole]
	if !validTLVs(r.tlvs) {
		return bad
	}
	if !unicast(r.src.Addr()) || !unicast(r.dst.Addr()) {
		return bad
	}
	r.keep = false
	return r
}

// validTLVs reports whether b is a well-formed sequence of TLVs (type,
// 16-bit length, value), which Envoy checks even when it keeps none.
func validTLVs(b []byte) bool {
	for len(b) > 0 {
		if len(b) < 3 {
			return false
		}
		n := int(binary.BigEndian.Uint16(b[1:3]))
		if len(b) < 3+n {
			return false
		}
		b = b[3+n:]
	}
	return true
}

// unicast reports whether a is an address a TCP peer can have: not the
// unspecified address, not multicast, not the IPv4 broadcast address.
func unicast(a netip.Addr) bool {
	return !a.IsUnspecified() && !a.IsMulticast() && a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}
