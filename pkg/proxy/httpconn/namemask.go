package httpconn

import "unsafe"

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
//
// prepareRequest then notes the end of its own appends (prepare): they
// have names of preparedNames only, but for the request id it generates,
// which is then the last of them. While the list has no edit since
// (edits), a table with none of those names looks only at the fields
// appended after them, and takes the id from its field.
type copiedFields struct {
	names nameMask
	adds  uint32
	// prepAdds and edits are the list's counts when prepareRequest
	// ended, when prepared.
	prepAdds, edits uint32
	prepared        bool
}

// preparedNames are the buckets of the names prepareRequest may append
// to a request's fields, but x-request-id: no name the tracing's start
// reads (TestPreparedNamesMissStartNames), and a name appended there must
// be in it (TestPreparedAppendsInPreparedNames).
var preparedNames = func() (m nameMask) {
	for _, name := range []string{
		"x-envoy-internal", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-port",
		"x-envoy-downstream-service-cluster", "user-agent", "x-envoy-downstream-service-node",
		"via", xfccHeader, "x-envoy-external-address",
	} {
		m |= nameBit(name)
	}
	return m
}()

// prepare notes the end of prepareRequest's edits of h.
func (c *copiedFields) prepare(h *headerList) {
	c.prepAdds, c.edits, c.prepared = h.adds, h.edits, true
}

// start returns the index of the first of h's fields that may have a
// name of the buckets in names: that of the first field appended since
// the copy, when no copied name is in those buckets, else 0. When
// prepareRequest's names are not in those buckets either and h had no
// edit since it, that of the first field appended since prepareRequest,
// and id, the index of the field of the request id it generated and
// appended last, whose bytes are at genAt (-1 for none): the caller takes
// it as found there.
func (c *copiedFields) start(h *headerList, names nameMask, genAt uintptr) (at, id int) {
	n := int(h.adds - c.adds)
	if c.names&names != 0 || n >= len(h.fields) {
		return 0, -1
	}
	if !c.prepared || preparedNames&names != 0 || h.edits != c.edits {
		return len(h.fields) - n, -1
	}
	// No field was removed since: those after prepareRequest's are
	// exactly the appends since.
	at = len(h.fields) - int(h.adds-c.prepAdds)
	if at > 0 && genAt != 0 && uintptr(unsafe.Pointer(unsafe.StringData(h.fields[at-1].value))) == genAt {
		return at, at - 1
	}
	return at, -1
}
