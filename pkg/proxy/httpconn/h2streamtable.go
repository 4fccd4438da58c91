package httpconn

import "iter"

// h2StreamTable is a connection's open streams by identifier. A client
// numbers its streams 1, 3, 5... in order, so the streams open at once are
// mostly neighbours: a small array indexed by the identifier's low bits
// holds them without hashing, and a map only the streams whose slot a
// stream opened h2StreamSlots identifiers earlier still holds. A map alone
// cost about 250 instructions per request (assign, look-ups, delete).
type h2StreamTable struct {
	slots [h2StreamSlots]*h2Stream
	more  map[uint32]*h2Stream
	n     int
}

// h2StreamSlots is the size of the table's array: room for the streams a
// usual client keeps open at once, in 128 bytes.
const h2StreamSlots = 16

// slot is where stream id goes when it is free.
func (t *h2StreamTable) slot(id uint32) **h2Stream {
	return &t.slots[(id>>1)&(h2StreamSlots-1)]
}

// get returns stream id, nil when it is not open.
func (t *h2StreamTable) get(id uint32) *h2Stream {
	if st := *t.slot(id); st != nil && st.id == id {
		return st
	}
	return t.more[id]
}

// put adds st, or replaces the stream of the same identifier.
func (t *h2StreamTable) put(st *h2Stream) {
	s := t.slot(st.id)
	switch {
	case *s != nil && (*s).id == st.id:
		*s = st
		return
	case *s == nil && t.more[st.id] == nil:
		*s = st
	default:
		if t.more == nil {
			t.more = make(map[uint32]*h2Stream)
		}
		if t.more[st.id] == nil {
			t.n++
		}
		t.more[st.id] = st
		return
	}
	t.n++
}

// remove forgets stream id, if it is open.
func (t *h2StreamTable) remove(id uint32) {
	if s := t.slot(id); *s != nil && (*s).id == id {
		*s = nil
		t.n--
		return
	}
	if _, ok := t.more[id]; ok {
		delete(t.more, id)
		t.n--
	}
}

// len is the number of open streams.
func (t *h2StreamTable) len() int { return t.n }

// all yields every open stream, in no particular order; the loop may
// remove the stream it is given.
func (t *h2StreamTable) all() iter.Seq[*h2Stream] {
	return func(yield func(*h2Stream) bool) {
		for i := range t.slots {
			if st := t.slots[i]; st != nil && !yield(st) {
				return
			}
		}
		for _, st := range t.more {
			if !yield(st) {
				return
			}
		}
	}
}
