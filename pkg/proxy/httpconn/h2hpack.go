package httpconn

import (
	"strconv"

	"golang.org/x/net/http2/hpack"
)

// The response side of HPACK (RFC 7541). The server encodes every field as
// a literal that is never added to the dynamic table: the encoder keeps no
// state, so header values can be views of buffers the next request
// reuses, a head costs no allocation, and the client's table size
// settings need no bookkeeping. Names and the common :status values come
// from the static table, and a value is Huffman-coded when that is
// shorter, unless enable_huffman_encoding is false: then every string is
// sent as it is (huff false), trading bytes for the CPU of the coding.

// statusIndex is the static-table index of a complete ":status" field.
func statusIndex(code int) int {
	switch code {
	case 200:
		return 8
	case 204:
		return 9
	case 206:
		return 10
	case 304:
		return 11
	case 400:
		return 12
	case 404:
		return 13
	case 500:
		return 14
	}
	return 0
}

// staticNameIndex is the static-table index of a header name the proxy
// often sends, 0 for others (sent as a literal name).
func staticNameIndex(name string) int {
	switch name {
	case "accept-ranges":
		return 18
	case "access-control-allow-origin":
		return 20
	case "age":
		return 21
	case "cache-control":
		return 24
	case "content-disposition":
		return 25
	case "content-encoding":
		return 26
	case "content-language":
		return 27
	case "content-length":
		return 28
	case "content-location":
		return 29
	case "content-range":
		return 30
	case "content-type":
		return 31
	case "date":
		return 33
	case "etag":
		return 34
	case "expires":
		return 36
	case "last-modified":
		return 44
	case "link":
		return 45
	case "location":
		return 46
	case "retry-after":
		return 53
	case "server":
		return 54
	case "set-cookie":
		return 55
	case "strict-transport-security":
		return 56
	case "vary":
		return 59
	case "via":
		return 60
	case "www-authenticate":
		return 61
	}
	return 0
}

// appendHPACKInt appends v with an n-bit prefix whose high bits are
// first's (RFC 7541 §5.1).
func appendHPACKInt(dst []byte, first byte, n uint, v uint64) []byte {
	limit := uint64(1)<<n - 1
	if v < limit {
		return append(dst, first|byte(v))
	}
	dst = append(dst, first|byte(limit))
	v -= limit
	for v >= 128 {
		dst = append(dst, byte(v&0x7f|0x80))
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendHPACKString appends a string literal, Huffman-coded when huff and
// shorter.
func appendHPACKString(dst []byte, s string, huff bool) []byte {
	if !huff {
		dst = appendHPACKInt(dst, 0, 7, uint64(len(s)))
		return append(dst, s...)
	}
	if n := hpack.HuffmanEncodeLength(s); n < uint64(len(s)) {
		dst = appendHPACKInt(dst, 0x80, 7, n)
		return hpack.AppendHuffmanString(dst, s)
	}
	dst = appendHPACKInt(dst, 0, 7, uint64(len(s)))
	return append(dst, s...)
}

// appendHPACKField appends a field as a literal without indexing
// (RFC 7541 §6.2.2). name must be lower case.
func appendHPACKField(dst []byte, name, value string, huff bool) []byte {
	return appendHPACKString(appendHPACKName(dst, name, huff), value, huff)
}

// appendHPACKName appends the part of a literal field without indexing
// before its value: the name's static-table index, or the name itself.
func appendHPACKName(dst []byte, name string, huff bool) []byte {
	if i := staticNameIndex(name); i > 0 {
		return appendHPACKInt(dst, 0, 4, uint64(i))
	}
	dst = append(dst, 0)
	return appendHPACKString(dst, name, huff)
}

// appendHPACKStatus appends the :status field.
func appendHPACKStatus(dst []byte, code int, huff bool) []byte {
	if i := statusIndex(code); i > 0 {
		// An indexed field (§6.1).
		return appendHPACKInt(dst, 0x80, 7, uint64(i))
	}
	var num [3]byte
	// :status is static entry 8; its value is a literal.
	dst = appendHPACKInt(dst, 0, 4, 8)
	return appendHPACKString(dst, view(strconv.AppendInt(num[:0], int64(code), 10)), huff)
}
