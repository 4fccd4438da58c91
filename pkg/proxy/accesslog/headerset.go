package accesslog

// maxHeaderSet is how many headers one HeaderSetGetter call finds.
const maxHeaderSet = 4

// HeaderNames are up to four distinct lower-case header names that a
// HeaderSetGetter finds in one pass; NewHeaderNames builds them. The names
// are also kept by length, so that a pass over a message's fields passes
// most of them over with one test and finds the others with one
// comparison.
type HeaderNames struct {
	names [maxHeaderSet]string
	n     int
	// byLen[len(name)%64] is 1 + the position of the only name of that
	// length, 0 when there is none, -1 when there are several.
	byLen [64]int8
}

// NewHeaderNames builds HeaderNames; names past the fourth, and repeated
// ones, are a programming error.
func NewHeaderNames(names ...string) HeaderNames {
	if len(names) > maxHeaderSet {
		panic("accesslog: more than four header names in one set")
	}
	var h HeaderNames
	for _, name := range names {
		if h.Index(name) >= 0 {
			panic("accesslog: header name " + name + " twice in one set")
		}
		h.names[h.n] = name
		h.n++
		if k := &h.byLen[len(name)&63]; *k == 0 {
			*k = int8(h.n)
		} else {
			*k = -1
		}
	}
	return h
}

// Len is the number of names.
func (h *HeaderNames) Len() int { return h.n }

// Name is the i-th name.
func (h *HeaderNames) Name(i int) string { return h.names[i] }

// Index is the position of name in the set, -1 when it is not in it.
func (h *HeaderNames) Index(name string) int {
	switch k := h.byLen[len(name)&63]; {
	case k == 0:
		return -1
	case k > 0:
		if h.names[k-1] == name {
			return int(k - 1)
		}
		return -1
	}
	for i := range h.n {
		if h.names[i] == name {
			return i
		}
	}
	return -1
}

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
// implements it. The names travel by pointer and the values by value,
// never as slices of the caller's arrays, so that the caller's stack does
// not escape through the interface call.
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
	for i := range names.n {
		if val, ok := h.Get(names.names[i]); ok {
			v.Values[i] = val
			v.Found |= 1 << i
		}
	}
	return v
}
