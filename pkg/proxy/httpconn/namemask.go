package httpconn

// nameMask is a set of buckets of header names, a bit per bucket: a
// name's bucket is a hash of its length and of its last and middle bytes.
// The request's fields note the buckets of their names as they are copied
// from the HTTP/1 parser (copiedFields), so that the tracing's start can
// tell, without a pass over those fields, that none of them has a name it
// looks for (spanHeaderTable.names): on most requests none has.
type nameMask uint64

// nameBit is the bucket of name (not empty). The multipliers keep the
// tracing's names in buckets of their own, apart from those of the common
// request headers (TestNameMaskSeparatesCommonHeaders).
func nameBit(name string) nameMask {
	n := len(name)
	return 1 << ((uint(n)*9 + uint(name[n-1]) + uint(name[n>>1])*13) & 63)
}

// copiedFields says which names a request's first fields have: those
// copied from the parser, until the count of appends to the list
// (headerList.adds) was adds. Names join a list only by appends at its
// end, and deletions keep the order, so every other name is among the
// last (adds now - adds) fields. names is every bucket when the request's
// fields were not noted (HTTP/2: its streams set it so).
type copiedFields struct {
	names nameMask
	adds  uint32
}

// fields returns the fields of h that may have a name of the buckets
// in names, and the index of the first: the fields appended since the
// copy, when no copied name is in those buckets, else all of them.
func (c copiedFields) fields(h *headerList, names nameMask) ([]field, int) {
	at := 0
	if n := int(h.adds - c.adds); c.names&names == 0 && n < len(h.fields) {
		at = len(h.fields) - n
	}
	return h.fields[at:], at
}
