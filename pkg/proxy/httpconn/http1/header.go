package http1

// Header is one header field. Name is lower case; Value has the optional
// whitespace around it removed. Both reference the head buffer.
type Header struct {
	Name  []byte
	Value []byte
}

// Headers are a message's header fields in the order received.
type Headers []Header

// Get returns the value of the first field named name (lower case) and
// whether there is one.
func (h Headers) Get(name string) ([]byte, bool) {
	for i := range h {
		if string(h[i].Name) == name {
			return h[i].Value, true
		}
	}
	return nil, false
}

// Count returns how many fields are named name (lower case).
func (h Headers) Count(name string) int {
	n := 0
	for i := range h {
		if string(h[i].Name) == name {
			n++
		}
	}
	return n
}

// NextToken splits the first element off a comma-separated list value
// (RFC 9110 §5.6.1): it returns the element with its whitespace trimmed
// and the rest of the list. Empty elements come back empty, so callers
// skip them.
func NextToken(list []byte) (elem, rest []byte) {
	for i, c := range list {
		if c == ',' {
			return trimOWS(list[:i]), list[i+1:]
		}
	}
	return trimOWS(list), nil
}

// HasToken reports whether the comma-separated list value holds the
// lower-case token, ignoring case.
func HasToken(list []byte, token string) bool {
	for len(list) > 0 {
		var elem []byte
		elem, list = NextToken(list)
		if EqualFold(elem, token) {
			return true
		}
	}
	return false
}
