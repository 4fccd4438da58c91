package httpconn

// hpackMemo remembers the encoding of the response fields a connection
// sent lately, so that a field sent again is copied rather than
// Huffman-coded again: under load nearly every field of a response head
// repeats the previous response's (server, date within its second,
// content-type, content-length), and the names that are not in the static
// table (x-envoy-upstream-service-time) are long literals whose values
// change. The encoding stays the stateless one of h2hpack.go, so the bytes
// on the wire are the same as without the memo.
//
// A slot, chosen by a hash of the name, holds one name as it came (an
// HTTP/1 upstream's may have upper-case letters) with the encoding of its
// lower-case form, and the last value sent with it with its encoding: a
// lookup costs two comparisons, and the hash only when the field is not
// where the previous head had it; a collision or a new value only costs
// the encoding it would have cost anyway. The memo belongs to a connection
// (its streams' heads are encoded under h2Conn.mu) and is made on its
// first response head; a slot holds at most 2 × hpackMemoMax bytes and
// their encodings, and only the slots of names used hold any.
type hpackMemo struct {
	slots [hpackMemoSlots]hpackMemoSlot
	// order is the slot of each of the last head's first fields (see
	// slotFor).
	order [hpackMemoOrder]uint8
	// scratch holds a name being lowered.
	scratch []byte
	// huff: strings are Huffman-coded when shorter (the connection's
	// enable_huffman_encoding, fixed for the memo's life).
	huff bool
}

// hpackMemoSlot is a remembered field: buf holds the name as it came, the
// encoding of its lower-case form
// (the first bytes of a field literal with that name), the value and its
// encoding (a string literal), back to back, ending at nameEnd, nameEncEnd,
// valueEnd and len(buf).
type hpackMemoSlot struct {
	buf                           []byte
	nameEnd, nameEncEnd, valueEnd int32
}

const (
	// hpackMemoSlots is the number of names remembered: responses have a
	// handful, and with 32 slots the usual ones fall in slots of their
	// own.
	hpackMemoSlots = 32
	// hpackMemoMax bounds a remembered name, and a remembered value:
	// longer ones are encoded each time.
	hpackMemoMax = 64
	// hpackMemoOrder is how many of a head's first fields have their
	// slot remembered by position.
	hpackMemoOrder = 16
)

// appendField appends the encoding of the i-th field of a response head
// as appendHPACKField does with the name in lower case, or nothing for a
// connection-specific field, which HTTP/2 forbids (RFC 9113 §8.2.2). The
// name may have upper-case letters (an HTTP/1 upstream's): a remembered
// name is matched as it came, so a repeated one is neither lowered nor
// checked again. An empty name is not remembered (an empty slot would
// match it).
func (m *hpackMemo) appendField(dst []byte, i int, name, value string) []byte {
	if len(name) > hpackMemoMax || name == "" {
		lower := lowerInto(&m.scratch, name)
		if connectionSpecific(lower) {
			return dst
		}
		return appendHPACKField(dst, lower, value, m.huff)
	}
	sl, same := m.slotFor(i, name)
	if !same && string(sl.buf[:sl.nameEnd]) != name {
		// Another name, or none yet: the slot is the new name's.
		lower := lowerInto(&m.scratch, name)
		if connectionSpecific(lower) {
			return dst
		}
		sl.buf = append(sl.buf[:0], name...)
		sl.nameEnd = int32(len(sl.buf))
		sl.buf = appendHPACKName(sl.buf, lower, m.huff)
		sl.nameEncEnd, sl.valueEnd = int32(len(sl.buf)), int32(len(sl.buf))
	}
	dst = append(dst, sl.buf[sl.nameEnd:sl.nameEncEnd]...)
	if sl.valueEnd > sl.nameEncEnd && string(sl.buf[sl.nameEncEnd:sl.valueEnd]) == value {
		return append(dst, sl.buf[sl.valueEnd:]...)
	}
	start := len(dst)
	dst = appendHPACKString(dst, value, m.huff)
	if len(value) <= hpackMemoMax && value != "" {
		sl.buf = append(sl.buf[:sl.nameEncEnd], value...)
		sl.valueEnd = int32(len(sl.buf))
		sl.buf = append(sl.buf, dst[start:]...)
	}
	return dst
}

// slotFor returns the slot for name, the i-th field of a head: the slot
// the previous head's i-th field used when it holds the same name (a
// proxied head repeats its fields in the same order from response to
// response, so the name is not hashed again), else the one a hash of the
// name picks, which the position then remembers. same reports that the
// slot was found by position and holds name, which the caller then does
// not compare again.
func (m *hpackMemo) slotFor(i int, name string) (*hpackMemoSlot, bool) {
	if i >= 0 && i < len(m.order) {
		if sl := &m.slots[m.order[i]]; string(sl.buf[:sl.nameEnd]) == name {
			return sl, true
		}
	}
	h := uint32(2166136261) // FNV-1a
	for j := 0; j < len(name); j++ {
		h = (h ^ uint32(name[j])) * 16777619
	}
	h %= hpackMemoSlots
	if i >= 0 && i < len(m.order) {
		m.order[i] = uint8(h)
	}
	return &m.slots[h], false
}
