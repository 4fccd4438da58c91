package hpack

// entryOverhead is what RFC 7541 §4.1 adds to an entry's name and value
// lengths to make its size.
const entryOverhead = 32

// table is the dynamic table (RFC 7541 §2.3.2, §4). The entries' bytes sit
// back to back, oldest first, in one buffer the table owns: adding appends
// at the end, evicting moves the start. When the end reaches the buffer's
// capacity the live bytes move to its front (see compact), so the buffer
// never exceeds twice the table's maximum size and each byte moves about
// once. Entries
// are never split, so an entry's name and value are views of the buffer.
// ents is a ring of the entries' positions, oldest at head; its length is
// a power of two.
type table struct {
	buf        []byte
	start      int // offset in buf of the oldest entry's bytes
	ents       []entry
	head, n    int
	size       uint32 // RFC 7541 §4.1 size of the entries
	maxSize    uint32 // the current maximum size (§4.2)
	allowedMax uint32 // the bound a size update may not exceed (SETTINGS_HEADER_TABLE_SIZE)
	// gen counts the changes of the table's entries or maximum size:
	// two blocks decoded at the same generation see the same table.
	gen uint64
}

// entry is where one entry's name and value lie in table.buf.
type entry struct {
	off          int
	nameLen, len uint32 // name length, name and value length
}

// at returns dynamic entry i, 1 the newest; ok is false when there is no
// such entry.
func (t *table) at(i uint64) (name, value []byte, ok bool) {
	if i == 0 || i > uint64(t.n) {
		return nil, nil, false
	}
	e := t.ents[(t.head+t.n-int(i))&(len(t.ents)-1)]
	b := t.buf[e.off : e.off+int(e.len)]
	return b[:e.nameLen], b[e.nameLen:], true
}

// setMaxSize applies a dynamic table size update.
func (t *table) setMaxSize(v uint32) {
	t.gen++
	t.maxSize = v
	t.evict(0)
}

// evict removes the oldest entries until room bytes more fit.
func (t *table) evict(room uint32) {
	for t.n > 0 && t.size+room > t.maxSize {
		e := &t.ents[t.head]
		t.size -= e.len + entryOverhead
		t.head = (t.head + 1) & (len(t.ents) - 1)
		t.n--
		if t.n == 0 {
			t.start, t.head = 0, 0
			t.buf = t.buf[:0]
		} else {
			t.start = t.ents[t.head].off
		}
	}
}

// add inserts a field as the newest entry (§4.4): older entries are
// evicted until it fits, and a field larger than the maximum size empties
// the table and is not added. name and value must not be views of the
// table. It returns the entry's name and value, views of the table, or
// false when the field was too large to add.
func (t *table) add(name, value []byte) (n, v []byte, added bool) {
	t.gen++
	size := uint32(len(name)) + uint32(len(value)) + entryOverhead
	if uint64(len(name))+uint64(len(value))+entryOverhead > uint64(t.maxSize) {
		t.evict(t.maxSize + 1)
		return nil, nil, false
	}
	t.evict(size)
	l := len(name) + len(value)
	if len(t.buf)+l > cap(t.buf) {
		t.compact(l)
	}
	off := len(t.buf)
	t.buf = append(t.buf, name...)
	t.buf = append(t.buf, value...)
	if t.n == len(t.ents) {
		t.growRing()
	}
	t.ents[(t.head+t.n)&(len(t.ents)-1)] = entry{off: off, nameLen: uint32(len(name)), len: uint32(l)}
	t.n++
	t.size += size
	b := t.buf[off:]
	return b[:len(name)], b[len(name):], true
}

// compact makes room for l more bytes at the end of buf: the live bytes
// move to the front, into a buffer of twice the capacity when they would
// fill more than half of the present one. The capacity only doubles, so
// it settles (at most at twice the maximum size, as the live bytes never
// exceed it) after a few moves and is never given up while the
// connection lasts.
func (t *table) compact(l int) {
	live := t.buf[t.start:]
	need := len(live) + l
	buf := t.buf
	if need > cap(buf)/2 {
		c := max(cap(buf), 256)
		for need > c/2 {
			c *= 2
		}
		buf = make([]byte, 0, c)
	}
	buf = append(buf[:0], live...) // copy handles the overlap
	shift := t.start
	for i := range t.n {
		t.ents[(t.head+i)&(len(t.ents)-1)].off -= shift
	}
	t.buf, t.start = buf, 0
}

// growRing doubles the entries' ring (16 at first), oldest first at 0.
func (t *table) growRing() {
	ents := make([]entry, max(2*len(t.ents), 16))
	for i := range t.n {
		ents[i] = t.ents[(t.head+i)&(len(t.ents)-1)]
	}
	t.ents, t.head = ents, 0
}
