package http1

// charClass marks what a byte may be in a message head. The table is
// immutable: it is built by a function at package initialisation and only
// read afterwards.
type charClass uint8

const (
	// classToken: tchar of RFC 9110 §5.6.2 (methods, header names).
	classToken charClass = 1 << iota
	// classValue: field-vchar, SP or HTAB (RFC 9110 §5.5), obs-text
	// included.
	classValue
	// classTarget: what a request-target may hold: visible ASCII and
	// obs-text (clients send raw UTF-8 paths; they are passed on as they
	// came).
	classTarget
)

// chars classifies every byte value.
var chars = buildChars()

// lower maps every byte to its ASCII lower case.
var lower = buildLower()

// tokenLower maps a tchar to its ASCII lower case and every other byte to
// 0 (not a tchar): a header name is checked and lower-cased with one load
// a byte.
var tokenLower = buildTokenLower()

func buildChars() (t [256]charClass) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if isTchar(b) {
			t[c] |= classToken
		}
		if b == '\t' || (b >= ' ' && b != 0x7f) {
			t[c] |= classValue
		}
		if b > ' ' && b != 0x7f {
			t[c] |= classTarget
		}
	}
	return t
}

func isTchar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func buildTokenLower() (t [256]byte) {
	for c := 0; c < 256; c++ {
		if isTchar(byte(c)) {
			t[c] = lower[c]
		}
	}
	return t
}

func buildLower() (t [256]byte) {
	for c := 0; c < 256; c++ {
		t[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			t[c] = byte(c) + 'a' - 'A'
		}
	}
	return t
}

// EqualFold reports whether b equals the lower-case ASCII string s, ignoring
// the case of b.
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower[b[i]] != s[i] {
			return false
		}
	}
	return true
}

// isToken reports whether b is a non-empty token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if chars[c]&classToken == 0 {
			return false
		}
	}
	return true
}

// trimOWS removes optional whitespace (SP, HTAB) around b.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
