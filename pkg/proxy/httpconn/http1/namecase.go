package http1

import "bytes"

// NameCases records the spelling field names arrived with, what Envoy's
// preserve_case header formatter keeps for a message: the first spelling
// of each name. The zero value is empty; Reset empties it keeping its
// memory.
type NameCases struct {
	// buf holds the recorded spellings one after another; ends are
	// where each ends in buf.
	buf  []byte
	ends []int
}

// Reset forgets every spelling.
func (n *NameCases) Reset() {
	n.buf, n.ends = n.buf[:0], n.ends[:0]
}

// Record notes the spellings of the fields h, parsed in place from head
// (ParseRequest and ParseResponse lower-case names there): raw is a copy
// of head taken before parsing, where each name still has its spelling.
// A field whose name is not a slice of head is skipped.
func (n *NameCases) Record(head, raw []byte, h Headers) {
	for i := range h {
		name := h[i].Name
		off := cap(head) - cap(name)
		if off < 0 || off+len(name) > len(raw) || len(name) == 0 {
			continue
		}
		orig := raw[off : off+len(name)]
		if !bytes.EqualFold(orig, name) || n.lookup(name) != nil {
			continue
		}
		n.buf = append(n.buf, orig...)
		n.ends = append(n.ends, len(n.buf))
	}
}

// lookup returns the recorded spelling of name, nil when it has none.
func (n *NameCases) lookup(name []byte) []byte {
	start := 0
	for _, end := range n.ends {
		if end-start == len(name) && bytes.EqualFold(n.buf[start:end], name) {
			return n.buf[start:end]
		}
		start = end
	}
	return nil
}

// FormatNames rewrites, in place, the field names of a serialised message
// head (start line, fields, blank line) that n has a spelling for with
// that spelling; with properRest, the other names in proper case (see
// ProperCaseNames), else they are left as written. This is Envoy's
// preserve_case formatter at encoding, properRest its
// formatter_type_on_envoy_headers PROPER_CASE.
func FormatNames(head []byte, n *NameCases, properRest bool) {
	eachFieldName(head, func(name []byte, colon bool) {
		if !colon || len(name) == 0 {
			return
		}
		if orig := n.lookup(name); orig != nil {
			copy(name, orig)
		} else if properRest {
			properCaseName(name)
		}
	})
}
