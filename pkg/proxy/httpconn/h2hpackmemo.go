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
// A slot, chosen by a hash of the name, holds one name with its encoding
// and the last value sent with it with its encoding: a lookup costs the
// hash and two comparisons; a collision or a new value only costs the
// encoding it would have cost anyway. The memo belongs to a connection
// (its streams' heads are encoded under h2Conn.mu) and is made on its
// first response head; a slot holds at most 2 × hpackMemoMax bytes and
// their encodings, and only the slots of names used hold any.
type hpackMemo struct {
	slots [hpackMemoSlots]hpackMemoSlot
	// huff: strings are Huffman-coded when shorter (the connection's
	// enable_huffman_encoding, fixed for the memo's life).
	huff bool
}

// hpackMemoSlot is a remembered field: buf holds the name, its encoding
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
)

// appendField appends the encoding of a field as appendHPACKField does.
// name must be lower case; an empty one is not remembered (an empty slot
// would match it).
func (m *hpackMemo) appendField(dst []byte, name, value string) []byte {
	if len(name) > hpackMemoMax || name == "" {
		return appendHPACKField(dst, name, value, m.huff)
	}
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	sl := &m.slots[h%hpackMemoSlots]
	if string(sl.buf[:sl.nameEnd]) != name {
		// Another name, or none yet: the slot is the new name's.
		sl.buf = append(sl.buf[:0], name...)
		sl.nameEnd = int32(len(sl.buf))
		sl.buf = appendHPACKName(sl.buf, name, m.huff)
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
