package grpcjsontranscoder

import "strings"

// unescapeSpec is url_unescape_spec: which percent-encoded characters of
// a multi-segment path variable are decoded.
type unescapeSpec uint8

const (
	// exceptReserved leaves RFC 6570's reserved characters encoded
	// (ALL_CHARACTERS_EXCEPT_RESERVED, the default).
	exceptReserved unescapeSpec = iota
	// exceptSlash leaves %2F encoded (ALL_CHARACTERS_EXCEPT_SLASH).
	exceptSlash
	// allCharacters decodes everything (ALL_CHARACTERS).
	allCharacters
)

// unescape decodes s per the spec; a '%' not followed by two hex digits
// stays as it is.
func (spec unescapeSpec) unescape(s string) string {
	return unescapeWith(s, spec, false)
}

// unescapeAll decodes every percent-encoded character of s.
func unescapeAll(s string) string { return unescapeWith(s, allCharacters, false) }

// unescapeWith decodes s per spec, and '+' as a space when plus is set
// (query_param_unescape_plus).
func unescapeWith(s string, spec unescapeSpec, plus bool) string {
	if !strings.ContainsRune(s, '%') && (!plus || !strings.ContainsRune(s, '+')) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '+' && plus {
			b.WriteByte(' ')
			continue
		}
		if c != '%' || i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			b.WriteByte(c)
			continue
		}
		d := unhex(s[i+1])<<4 | unhex(s[i+2])
		keep := (spec == exceptReserved && strings.IndexByte(":/?#[]@!$&'()*+,;=", d) >= 0) ||
			(spec == exceptSlash && d == '/')
		if keep {
			b.WriteString(s[i : i+3])
		} else {
			b.WriteByte(d)
		}
		i += 2
	}
	return b.String()
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
