package accesslog

// maxHeaderSet is how many headers one HeaderSetGetter call finds.
const maxHeaderSet = 8

// HeaderNames are the distinct lower-case header names a HeaderSetGetter
// looks up, "" after the last.
type HeaderNames [maxHeaderSet]string

// HeaderValues are what a HeaderSetGetter found for HeaderNames: when bit
// i of Found is set, Values[i] is the value of name i, as Get returns it
// (several fields joined by ",").
type HeaderValues struct {
	Values [maxHeaderSet]string
	Found  uint8
}

// Has reports whether name i was found, and its value.
func (v *HeaderValues) Has(i int) (string, bool) {
	return v.Values[i], v.Found&(1<<i) != 0
}

// HeaderSetGetter is a HeaderGetter that finds several headers in one pass
// over its fields, where a format reading several headers would otherwise
// search them once per header. The connection manager's header list
// implements it. The arrays travel by pointer and by value, never as
// slices, so that the caller's stack does not escape through the
// interface call.
type HeaderSetGetter interface {
	HeaderGetter
	// GetSet returns, for each name of names, what Get would.
	GetSet(names *HeaderNames) HeaderValues
}

// getHeaders looks names up in h (nil holds none): in one pass when h is
// a HeaderSetGetter, else one Get per name.
func getHeaders(h HeaderGetter, names *HeaderNames) (v HeaderValues) {
	if h == nil {
		return v
	}
	if s, ok := h.(HeaderSetGetter); ok {
		return s.GetSet(names)
	}
	for i, name := range names {
		if name == "" {
			break
		}
		if val, ok := h.Get(name); ok {
			v.Values[i] = val
			v.Found |= 1 << i
		}
	}
	return v
}
