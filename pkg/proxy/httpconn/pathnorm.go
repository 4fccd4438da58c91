package httpconn

import (
	"strings"
)

// The path normalisations of the connection manager, applied to :path
// before any filter or route sees it, in Envoy's order: escaped slashes
// (path_with_escaped_slashes_action), then normalize_path, then
// merge_slashes. Each works on the path before the query, which is kept as
// it is.

// splitQuery splits a request target into its path and its query (with
// its "?"), which the normalisations leave alone.
func splitQuery(target string) (path, query string) {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i], target[i:]
	}
	return target, ""
}

// unescapeSlashes decodes %2F and %5C (either case) in the path to "/" and
// "\", and reports whether it found any.
func unescapeSlashes(target string) (string, bool) {
	path, query := splitQuery(target)
	if !strings.Contains(path, "%") {
		return target, false
	}
	var b strings.Builder
	found := false
	for i := 0; i < len(path); i++ {
		if path[i] == '%' && i+2 < len(path) {
			switch strings.ToUpper(path[i+1 : i+3]) {
			case "2F":
				b.WriteByte('/')
				i += 2
				found = true
				continue
			case "5C":
				b.WriteByte('\\')
				i += 2
				found = true
				continue
			}
		}
		b.WriteByte(path[i])
	}
	if !found {
		return target, false
	}
	return b.String() + query, true
}

// unreserved reports whether c is an unreserved character of RFC 3986
// §2.3, which percent-encoding must not change the meaning of.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// mustEscape reports whether a path byte is escaped by the canonical form:
// controls, space, non-ASCII bytes and the characters browsers escape in a
// path.
func mustEscape(c byte) bool {
	switch c {
	case '"', '<', '>', '`', '{', '}':
		return true
	}
	return c <= ' ' || c >= 0x7f
}

// unhex is the value of a hex digit, -1 for another byte.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

const upperHex = "0123456789ABCDEF"

// canonicalPath is normalize_path: the path in the canonical form Envoy's
// URL library gives it (RFC 3986 §6.2.2): backslashes become slashes,
// percent-encoded unreserved characters are decoded and other escapes
// upper-cased, bytes that may not appear are escaped, and "." and ".."
// segments are removed (§5.2.4), never above the root. ok is false for a
// path that does not start with "/".
func canonicalPath(target string) (string, bool) {
	path, query := splitQuery(target)
	if path == "" || (path[0] != '/' && path[0] != '\\') {
		return target, false
	}
	var b strings.Builder
	b.Grow(len(path))
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '\\':
			b.WriteByte('/')
		case c == '%' && i+2 < len(path) && unhex(path[i+1]) >= 0 && unhex(path[i+2]) >= 0:
			v := byte(unhex(path[i+1])<<4 | unhex(path[i+2]))
			if unreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperHex[v>>4])
				b.WriteByte(upperHex[v&15])
			}
			i += 2
		case mustEscape(c):
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return removeDotSegments(b.String()) + query, true
}

// removeDotSegments applies RFC 3986 §5.2.4 to an absolute path: "."
// segments go, ".." removes the segment before it (none above the root),
// and a path ending in either ends with "/".
func removeDotSegments(path string) string {
	if !strings.Contains(path, ".") {
		return path
	}
	segs := strings.Split(path[1:], "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			trailing = last
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = last
		default:
			out = append(out, s)
			trailing = false
		}
	}
	p := "/" + strings.Join(out, "/")
	if trailing && len(out) > 0 {
		p += "/"
	}
	return p
}

// mergeSlashes is merge_slashes: runs of "/" in the path become one, as
// Envoy's PathTransformer::mergeSlashes writes them.
func mergeSlashes(target string) string {
	path, query := splitQuery(target)
	if !strings.Contains(path, "//") {
		return target
	}
	var b strings.Builder
	if strings.HasPrefix(path, "/") {
		b.WriteByte('/')
	}
	first := true
	for _, seg := range strings.Split(path, "/") {
		if seg == "" {
			continue
		}
		if !first {
			b.WriteByte('/')
		}
		b.WriteString(seg)
		first = false
	}
	// As Envoy writes it, "//" alone stays "//".
	if strings.HasSuffix(path, "/") {
		b.WriteByte('/')
	}
	return b.String() + query
}
