package httpconn

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// field is one header field of a headerList. Names are lower case.
type field struct {
	name  string
	value string
}

// headerList is a message's header fields as the connection manager edits
// them: the received fields (views of the head buffer) plus the ones
// filters and routes add, in order. It implements router.HeaderEditor and
// accesslog.HeaderGetter without allocating for single-valued headers.
type headerList struct {
	fields []field
	// adds counts the fields appended, ever: a name can join the list
	// only by an append, so a list whose count has not moved since a
	// pass over it holds no name that pass did not see (the tracing's
	// propagation relies on it to add its traceparent without a search).
	adds uint32
	// edits counts the changes to fields already there, ever: values
	// replaced, fields removed. A list whose edits have not moved since a
	// pass over it holds the fields that pass saw, as they were, followed
	// by those appended since (the tracing's finished span reuses its
	// start's pass that way).
	edits uint32
}

var (
	_ router.HeaderEditor       = (*headerList)(nil)
	_ router.HeaderFields       = (*headerList)(nil)
	_ accesslog.HeaderSetGetter = (*headerList)(nil)
)

// reset empties the list, keeping its capacity.
func (h *headerList) reset() {
	h.truncate(0)
}

// truncate removes the fields from index n on, an edit when there are
// any.
func (h *headerList) truncate(n int) {
	if n == len(h.fields) {
		return
	}
	clear(h.fields[n:])
	h.fields = h.fields[:n]
	h.edits++
}

// Get returns the value of name (lower case). Several fields of one name
// come back joined by ",", as Envoy joins them; only that rare case
// allocates.
func (h *headerList) Get(name string) (string, bool) {
	first := -1
	for i := range h.fields {
		if h.fields[i].name != name {
			continue
		}
		if first >= 0 {
			return h.join(name, first), true
		}
		first = i
	}
	if first < 0 {
		return "", false
	}
	return h.fields[first].value, true
}

// GetSet looks every name of names up in one pass over the fields
// (accesslog.HeaderSetGetter): the access log's default format reads four
// request headers. A name found twice is joined as Get joins it.
func (h *headerList) GetSet(names *accesslog.HeaderNames) (v accesslog.HeaderValues) {
	var repeated uint8
	for i := range h.fields {
		j := names.Index(h.fields[i].name)
		switch {
		case j < 0:
		case v.Found&(1<<j) != 0:
			repeated |= 1 << j
		default:
			v.Values[j], v.Found = h.fields[i].value, v.Found|1<<j
		}
	}
	for j := 0; repeated != 0; j++ {
		if repeated&(1<<j) != 0 {
			v.Values[j], _ = h.Get(names.Name(j))
			repeated &^= 1 << j
		}
	}
	return v
}

// join concatenates every value of name, from the field at first on.
func (h *headerList) join(name string, first int) string {
	var b strings.Builder
	b.WriteString(h.fields[first].value)
	for _, f := range h.fields[first+1:] {
		if f.name == name {
			b.WriteByte(',')
			b.WriteString(f.value)
		}
	}
	return b.String()
}

// Field returns the value of the i-th field named name (from 0), false
// past the last: hash policies read several fields of a header apart
// (router.HeaderFields).
func (h *headerList) Field(name string, i int) (string, bool) {
	for j := range h.fields {
		if h.fields[j].name != name {
			continue
		}
		if i == 0 {
			return h.fields[j].value, true
		}
		i--
	}
	return "", false
}

// Has reports whether a field is named name.
func (h *headerList) Has(name string) bool {
	for i := range h.fields {
		if h.fields[i].name == name {
			return true
		}
	}
	return false
}

// Range calls fn with each field in order until fn returns false (the
// tap filter records the response headers this way).
func (h *headerList) Range(fn func(name, value string) bool) {
	for i := range h.fields {
		if !fn(h.fields[i].name, h.fields[i].value) {
			return
		}
	}
}

// Set replaces every field named name by one with value, in the place of
// the first.
func (h *headerList) Set(name, value string) {
	for i := range h.fields {
		if h.fields[i].name == name {
			h.fields[i].value = value
			h.edits++
			h.delFrom(name, i+1)
			return
		}
	}
	h.fields = append(h.fields, field{name, value})
	h.adds++
}

// SetDel is Set(set, value) then Del(del) (tracing.HeaderSetDeleter), in
// one pass over the fields when neither has a duplicate to remove (W3C
// propagation: the traceparent set, no tracestate).
func (h *headerList) SetDel(set, value, del string) {
	first, dirty := scanSetDel(h.fields, set, del)
	switch {
	case dirty:
		h.Set(set, value)
		h.Del(del)
	case first >= 0:
		h.fields[first].value = value
		h.edits++
	default:
		h.fields = append(h.fields, field{set, value})
		h.adds++
	}
}

// scanSetDel returns the index of the last of fields named set (-1 for
// none), and whether any is named del or set more than once. A name of
// the length of set or del is compared by its first word before its
// bytes: a field of the same length (user-agent beside tracestate) is
// told apart without a call. A function of its own, which calls nothing
// in the usual case, keeps the loop's state in registers.
func scanSetDel(fields []field, set, del string) (first int, dirty bool) {
	first = -1
	sw, dw := firstWord(set), firstWord(del)
	for i := range fields {
		name := fields[i].name
		if len(name) != len(set) && len(name) != len(del) {
			continue
		}
		if len(name) == len(set) && firstWord(name) == sw && name == set {
			if first >= 0 {
				dirty = true
			}
			first = i
		} else if len(name) == len(del) && firstWord(name) == dw && name == del {
			dirty = true
		}
	}
	return first, dirty
}

// firstWord is s's first eight bytes as a word, 0 when it is shorter.
func firstWord(s string) uint64 {
	if len(s) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Pointer(unsafe.StringData(s)))[:])
}

// Add appends a field.
func (h *headerList) Add(name, value string) {
	h.fields = append(h.fields, field{name, value})
	h.adds++
}

// Del removes every field named name.
func (h *headerList) Del(name string) { h.delFrom(name, 0) }

// delFrom removes the fields named name at index from and after, keeping
// the order of the others.
func (h *headerList) delFrom(name string, from int) {
	// Nothing is written until the first match: the usual case, a field
	// that is not there, only reads.
	for from < len(h.fields) && h.fields[from].name != name {
		from++
	}
	if from == len(h.fields) {
		return
	}
	out := from
	for i := from; i < len(h.fields); i++ {
		if h.fields[i].name != name {
			h.fields[out] = h.fields[i]
			out++
		}
	}
	h.truncate(out)
}
