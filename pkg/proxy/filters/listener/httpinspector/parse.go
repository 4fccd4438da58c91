package httpinspector

import (
	"bytes"
	"strings"
)

// result is what the first bytes of a connection show.
type result int

const (
	needMore result = iota // not enough bytes to tell
	notHTTP                // not an HTTP request
	http10                 // an HTTP/1.x request line other than HTTP/1.1
	http11                 // an HTTP/1.1 request line
	http2                  // the HTTP/2 connection preface
)

// h2Preface is the client's HTTP/2 connection preface (RFC 9113, 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// inspect classifies a connection's first bytes the way Envoy's inspector
// does with its default request-line parser: the whole HTTP/2 preface, or
// a first line "method target version" whose method is any token, whose
// target is an origin, absolute or authority form, and whose version is
// HTTP/d.d or absent (HTTP/0.9). Only a line ending "HTTP/1.1" is
// HTTP/1.1; the others count as HTTP/1.0. A control character ends the
// inspection at once (Envoy's parser rejects it as it scans).
func inspect(b []byte) result {
	if n := min(len(b), len(h2Preface)); string(b[:n]) == h2Preface[:n] {
		if len(b) < len(h2Preface) {
			return needMore
		}
		return http2
	}
	if len(b) == 0 {
		return needMore
	}
	if b[0] == '\r' || b[0] == '\n' {
		return notHTTP
	}
	end := bytes.IndexByte(b, '\n')
	line := b
	if end >= 0 {
		line = b[:end]
	}
	for _, c := range line {
		if invalidChar(c) {
			return notHTTP
		}
	}
	if end < 0 {
		return needMore
	}
	return requestLine(strings.TrimSuffix(string(line), "\r"))
}

// invalidChar reports the control characters a request line may not hold.
func invalidChar(c byte) bool {
	return (c < 0x20 && c != '\t' && c != '\r') || c == 0x7f
}

// requestLine classifies a whole first line.
func requestLine(line string) result {
	fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(fields) < 2 || len(fields) > 3 || !isToken(fields[0]) || !validTarget(fields[1], fields[0] == "CONNECT") {
		return notHTTP
	}
	if len(fields) == 2 {
		return http10 // HTTP/0.9: no version
	}
	v, ok := strings.CutPrefix(fields[2], "HTTP/")
	if !ok || len(v) != 3 || !isDigit(v[0]) || v[1] != '.' || !isDigit(v[2]) {
		return notHTTP
	}
	if v == "1.1" {
		return http11
	}
	return http10
}

// validTarget reports whether s is a request target Envoy's parser
// takes: a path (or "*"), an absolute URI with a scheme and a host, or,
// for CONNECT, an authority.
func validTarget(s string, connect bool) bool {
	if s == "" {
		return false
	}
	if s[0] == '/' || s[0] == '*' {
		return allPathChars(s[1:])
	}
	if !connect {
		if !isAlpha(s[0]) {
			return false
		}
		i := 1
		for i < len(s) && (isAlpha(s[i]) || isDigit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.') {
			i++
		}
		rest, ok := strings.CutPrefix(s[i:], "://")
		if !ok {
			return false
		}
		s = rest
	}
	cut := strings.IndexAny(s, "/?")
	host, pathQuery := s, ""
	if cut >= 0 {
		host, pathQuery = s[:cut], s[cut:]
	}
	for i := 0; i < len(host); i++ {
		if !hostChar(host[i]) {
			return false
		}
	}
	return !strings.Contains(host, "@@") && allPathChars(pathQuery)
}

// allPathChars reports whether s holds only the characters of a path and
// query: visible ASCII.
func allPathChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			return false
		}
	}
	return true
}

// hostChar reports whether c may appear in a target's host (with its
// port and user information).
func hostChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!$%&'()*+,-.:;=@[]_~", c) >= 0
}

// isToken reports whether s is an RFC 9110 token (a method).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAlpha(s[i]) && !isDigit(s[i]) && strings.IndexByte("!#$%&'*+-.^_`|~", s[i]) < 0 {
			return false
		}
	}
	return s != ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
