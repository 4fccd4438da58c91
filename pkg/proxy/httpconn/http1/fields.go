package http1

import (
	"bytes"
	"encoding/binary"
)

// parseFields parses the header section that follows the start line: every
// line up to the empty one that ends head. Names are validated and
// lower-cased in place; values are trimmed and validated. It appends to
// dst[:0] and returns the fields.
func parseFields(head []byte, dst Headers, maxCount int) (Headers, error) {
	dst = dst[:0]
	for len(head) > 0 {
		nl := bytes.IndexByte(head, '\n')
		if nl < 0 {
			// ReadHead always ends a head with a line feed; a head from
			// elsewhere may not.
			return dst, ErrTruncatedHead
		}
		end := nl
		if end > 0 && head[end-1] == '\r' {
			end--
		}
		if end == 0 {
			break
		}
		if head[0] == ' ' || head[0] == '\t' {
			return dst, ErrObsFold
		}
		// The name is checked and lower-cased as the colon is looked
		// for: it ends at the first byte that is not a tchar, which must
		// be the colon.
		colon := nameEnd(head[:end])
		if colon <= 0 {
			return dst, ErrHeaderName
		}
		value := trimOWS(head[colon+1 : end])
		// Eight bytes at a time while they are plain (see
		// plainValueWord); the byte loop decides the rest.
		rest := value
		for len(rest) >= 8 && plainValueWord(binary.LittleEndian.Uint64(rest)) {
			rest = rest[8:]
		}
		for _, c := range rest {
			if chars[c]&classValue == 0 {
				if c == '\r' {
					return dst, ErrBareCR
				}
				return dst, ErrHeaderValue
			}
		}
		if len(dst) == maxCount {
			return dst, ErrTooManyHeaders
		}
		dst = append(dst, Header{Name: head[:colon], Value: value})
		head = head[nl+1:]
	}
	return dst, nil
}

// splitLine returns the first line of head without its line ending, and the
// rest. A CR anywhere but before the LF is an error.
func splitLine(head []byte) (line, rest []byte, err error) {
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		return nil, nil, ErrTruncatedHead
	}
	line, rest = head[:nl], head[nl+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, nil, ErrBareCR
	}
	return line, rest, nil
}

// parseContentLength reads a Content-Length value. A list of identical
// values ("42, 42", which some intermediaries produce) counts as one value
// (RFC 9110 §8.6); anything else that is not a plain decimal number is an
// error.
func parseContentLength(v []byte) (int64, error) {
	n := int64(-1)
	for len(v) > 0 || n < 0 {
		var elem []byte
		elem, v = NextToken(v)
		m, ok := parseDecimal(elem)
		if !ok || (n >= 0 && m != n) {
			return 0, ErrContentLength
		}
		n = m
	}
	return n, nil
}

// parseDecimal reads a non-negative decimal number of at most 18 digits,
// so it cannot overflow an int64.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// nameEnd lower-cases the header name that starts line, in place, and
// returns where it ends: the offset of the colon that follows it, or -1
// when a byte before the colon is not a tchar or there is no colon. One
// pass does what a search for the colon and a check of the name did.
func nameEnd(line []byte) int {
	for i, c := range line {
		if c == ':' {
			return i
		}
		l := tokenLower[c]
		if l == 0 {
			return -1
		}
		line[i] = l
	}
	return -1
}
