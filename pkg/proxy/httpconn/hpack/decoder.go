package hpack

import (
	"errors"
	"strconv"
	"unsafe"
)

// Field is one decoded header field. Name and Value are views valid only
// during the emit call that receives them: a caller that keeps them copies
// them, unless StaticName or StaticValue says they are the static table's.
type Field struct {
	Name, Value string
	// Sensitive: the field came as a literal never indexed (RFC 7541
	// §6.2.3), which an intermediary must forward the same way.
	Sensitive bool
	// StaticName and StaticValue: the string is a static table entry's
	// (§2.3.1: ":method: GET", the name "user-agent"), which lives as
	// long as the program and may be kept without a copy.
	StaticName, StaticValue bool
}

// DecodingError is a malformed header block: for HTTP/2 a connection
// error of type COMPRESSION_ERROR.
type DecodingError struct{ msg string }

func (e DecodingError) Error() string { return "hpack: " + e.msg }

// ErrStringLength: a name or value is longer than SetMaxStringLength
// allows.
var ErrStringLength = errors.New("hpack: string too long")

var (
	errTruncated      = DecodingError{"truncated headers"}
	errInvalidRepr    = DecodingError{"invalid encoding"}
	errIntOverflow    = DecodingError{"integer overflow"}
	errSizeUpdateLate = DecodingError{"dynamic table size update after a header field"}
	errSizeTooLarge   = DecodingError{"dynamic table size update too large"}
	errNeedMore       = errors.New("need more data") // internal: the field continues in the next fragment
)

// indexError is an index beyond both tables.
func indexError(i uint64) error {
	return DecodingError{"invalid index " + strconv.FormatUint(i, 10)}
}

// maxInt bounds the integers the decoder reads (RFC 7541 §5.1 leaves the
// limit to implementations): the largest meaningful one, a table size
// from SETTINGS_HEADER_TABLE_SIZE, is 32 bits.
const maxInt = 1<<32 - 1

// keepBuffer is the largest scratch or pending buffer kept between blocks.
const keepBuffer = 4096

// Decoder decodes the header blocks of one HTTP/2 connection, keeping its
// dynamic table between them. Its methods are for one goroutine.
type Decoder struct {
	emit      func(Field)
	maxStrLen int
	// maxWireLen bounds a string as coded on the wire, 0 for none.
	maxWireLen int
	table      table
	// pending holds the start of a field that the previous fragment cut
	// (a block may be split over CONTINUATION frames anywhere).
	pending []byte
	// scratch receives Huffman-decoded strings and copies of table names.
	scratch []byte
	// fieldSeen: the block has had a field, so a size update is late.
	fieldSeen bool
}

// NewDecoder returns a decoder whose dynamic table may hold maxTableSize
// bytes (the SETTINGS_HEADER_TABLE_SIZE announced, 4096 by default), which
// calls emit with each field decoded.
func NewDecoder(maxTableSize uint32, emit func(Field)) *Decoder {
	d := &Decoder{emit: emit}
	d.table.maxSize = maxTableSize
	d.table.allowedMax = maxTableSize
	return d
}

// SetMaxStringLength makes a name or value longer than n bytes (after
// Huffman decoding) an ErrStringLength; 0, the default, means no limit.
func (d *Decoder) SetMaxStringLength(n int) {
	d.maxStrLen = n
	d.table.gen++ // the same block may decode differently now
}

// SetMaxWireStringLength makes a name or value whose coded length (before
// Huffman decoding) exceeds n bytes an ErrStringLength; 0, the default,
// means no limit of its own.
func (d *Decoder) SetMaxWireStringLength(n int) {
	d.maxWireLen = n
	d.table.gen++ // the same block may decode differently now
}

// SetEmitFunc changes the function called with each field.
func (d *Decoder) SetEmitFunc(emit func(Field)) { d.emit = emit }

// SetAllowedMaxDynamicTableSize sets the bound dynamic table size updates
// may not exceed: the SETTINGS_HEADER_TABLE_SIZE the endpoint announced.
// A bound below the table's current maximum shrinks the table at once, as
// nghttp2's decoder does: the peer's encoder must signal the smaller size
// before its next field (RFC 7541 §4.2), and the table never holds more
// than the endpoint agreed to keep.
func (d *Decoder) SetAllowedMaxDynamicTableSize(v uint32) {
	d.table.allowedMax = v
	if v < d.table.maxSize {
		d.table.setMaxSize(v)
	}
}

// DynamicTableSize returns the RFC 7541 §4.1 size of the dynamic table's
// entries, and its current maximum size.
func (d *Decoder) DynamicTableSize() (size, maxSize uint32) {
	return d.table.size, d.table.maxSize
}

// Generation identifies the state of the dynamic table: it changes with
// every entry added or evicted and every size update. A header block
// decoded twice at the same generation, without changing it, decodes to
// the same fields both times (a caller may then reuse what it made of
// the first decoding).
func (d *Decoder) Generation() uint64 { return d.table.gen }

// Write decodes a fragment of a header block, emitting its complete
// fields. A field cut by the fragment's end is kept until the next Write.
// Any error leaves the decoder unusable: the connection must end.
func (d *Decoder) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	buf := p
	if len(d.pending) > 0 {
		d.pending = append(d.pending, p...)
		buf = d.pending
	}
	for len(buf) > 0 {
		rest, err := d.field(buf)
		if err == errNeedMore {
			// A cut field holds at most two strings and their
			// integers: a longer rest can only be an over-long string.
			const intOverhead = 8
			if d.maxStrLen != 0 && int64(len(buf)) > 2*(int64(d.maxStrLen)+intOverhead) {
				return 0, ErrStringLength
			}
			d.pending = append(d.pending[:0], buf...) // copy handles the overlap
			return len(p), nil
		}
		if err != nil {
			return 0, err
		}
		buf = rest
	}
	d.pending = d.pending[:0]
	return len(p), nil
}

// Close ends a header block: a field still cut is an error. The decoder
// is ready for the next block.
func (d *Decoder) Close() error {
	d.fieldSeen = false
	// An unusually long string leaves its buffers to the collector
	// rather than held by an idle connection.
	if cap(d.scratch) > keepBuffer {
		d.scratch = nil
	}
	if cap(d.pending) > keepBuffer {
		d.pending = nil
	}
	if len(d.pending) > 0 {
		d.pending = d.pending[:0]
		return errTruncated
	}
	return nil
}

// field decodes the representation at the start of p (RFC 7541 §6) and
// returns what follows it, or errNeedMore when p ends inside it.
func (d *Decoder) field(p []byte) ([]byte, error) {
	b := p[0]
	switch {
	case b&0x80 != 0: // §6.1 indexed field
		i, rest, err := readInt(7, p)
		if err != nil {
			return p, err
		}
		name, value, err := d.at(i)
		if err != nil {
			return p, err
		}
		static := i <= uint64(len(staticTable))
		return rest, d.callEmit(Field{Name: view(name), Value: view(value), StaticName: static, StaticValue: static})
	case b&0xc0 == 0x40: // §6.2.1 literal with incremental indexing
		return d.literal(p, 6, true, false)
	case b&0xf0 == 0: // §6.2.2 literal without indexing
		return d.literal(p, 4, false, false)
	case b&0xf0 == 0x10: // §6.2.3 literal never indexed
		return d.literal(p, 4, false, true)
	case b&0xe0 == 0x20: // §6.3 dynamic table size update
		if d.fieldSeen {
			return p, errSizeUpdateLate
		}
		v, rest, err := readInt(5, p)
		if err != nil {
			return p, err
		}
		if v > uint64(d.table.allowedMax) {
			return p, errSizeTooLarge
		}
		d.table.setMaxSize(uint32(v))
		return rest, nil
	}
	return p, errInvalidRepr
}

// literal decodes a literal field whose name index has an n-bit prefix
// (§6.2). Strings are not decoded before the whole field is there.
func (d *Decoder) literal(p []byte, n uint, index, sensitive bool) ([]byte, error) {
	i, rest, err := readInt(n, p)
	if err != nil {
		return p, err
	}
	var name []byte
	var rawName rawString
	if i > 0 {
		name, _, err = d.at(i)
		if err != nil {
			return p, err
		}
	} else if rawName, rest, err = d.readString(rest); err != nil {
		return p, err
	}
	rawValue, rest, err := d.readString(rest)
	if err != nil {
		return p, err
	}
	// Decoded strings go to scratch; a name from the dynamic table is
	// copied there too when the field is to be added, since adding may
	// evict or move its entry (§4.4).
	d.scratch = d.scratch[:0]
	nameStart := 0
	if i == 0 {
		if name, err = d.decodeString(rawName); err != nil {
			return p, err
		}
	} else if index && i > uint64(len(staticTable)) {
		d.scratch = append(d.scratch, name...)
		name = d.scratch
	}
	valueStart := len(d.scratch)
	value, err := d.decodeString(rawValue)
	if err != nil {
		return p, err
	}
	// scratch may have moved while the value was decoded into it.
	if i == 0 && rawName.huffman || i > uint64(len(staticTable)) && index {
		name = d.scratch[nameStart:valueStart]
	}
	if rawValue.huffman {
		value = d.scratch[valueStart:]
	}
	if index {
		if n, v, ok := d.table.add(name, value); ok {
			name, value = n, v
		}
	}
	f := Field{Name: view(name), Value: view(value), Sensitive: sensitive}
	if i > 0 && i <= uint64(len(staticTable)) {
		// The static entry's name rather than the table's copy of it.
		f.Name, f.StaticName = staticTable[i-1].name, true
	}
	return rest, d.callEmit(f)
}

// at returns the field at index i of the static and dynamic tables (§2.3.3).
func (d *Decoder) at(i uint64) (name, value []byte, err error) {
	if i == 0 {
		return nil, nil, indexError(i)
	}
	if i <= uint64(len(staticTable)) {
		f := &staticTable[i-1]
		return bytesOf(f.name), bytesOf(f.value), nil
	}
	name, value, ok := d.table.at(i - uint64(len(staticTable)))
	if !ok {
		return nil, nil, indexError(i)
	}
	return name, value, nil
}

// callEmit checks a field's lengths and hands it out.
func (d *Decoder) callEmit(f Field) error {
	if d.maxStrLen != 0 && (len(f.Name) > d.maxStrLen || len(f.Value) > d.maxStrLen) {
		return ErrStringLength
	}
	d.fieldSeen = true
	d.emit(f)
	return nil
}

// rawString is a string literal as it lies in the block (§5.2).
type rawString struct {
	b       []byte
	huffman bool
}

// readString reads a string literal's length and finds its bytes. A
// length over the string limit fails at once, before its bytes arrive.
func (d *Decoder) readString(p []byte) (rawString, []byte, error) {
	if len(p) == 0 {
		return rawString{}, p, errNeedMore
	}
	huffman := p[0]&0x80 != 0
	l, rest, err := readInt(7, p)
	if err != nil {
		return rawString{}, p, err
	}
	if d.maxStrLen != 0 && l > uint64(d.maxStrLen) || d.maxWireLen != 0 && l > uint64(d.maxWireLen) {
		return rawString{}, p, ErrStringLength
	}
	if uint64(len(rest)) < l {
		return rawString{}, p, errNeedMore
	}
	return rawString{b: rest[:l], huffman: huffman}, rest[l:], nil
}

// decodeString returns a literal's bytes: themselves, or their Huffman
// decoding appended to scratch.
func (d *Decoder) decodeString(s rawString) ([]byte, error) {
	if !s.huffman {
		return s.b, nil
	}
	start := len(d.scratch)
	var err error
	d.scratch, err = appendHuffman(d.scratch, s.b, d.maxStrLen)
	return d.scratch[start:], err
}

// readInt reads an integer with an n-bit prefix (§5.1) from the start of
// p. Values over maxInt are errors; errNeedMore means p ends inside it.
func readInt(n uint, p []byte) (uint64, []byte, error) {
	if len(p) == 0 {
		return 0, p, errNeedMore
	}
	mask := uint64(1)<<n - 1
	v := uint64(p[0]) & mask
	if v < mask {
		return v, p[1:], nil
	}
	for i, shift := 1, uint(0); i < len(p); i, shift = i+1, shift+7 {
		b := p[i]
		v += uint64(b&0x7f) << shift
		if v > maxInt {
			return 0, p, errIntOverflow
		}
		if b&0x80 == 0 {
			return v, p[i+1:], nil
		}
		if shift >= 28 {
			// A sixth continuation byte: more than 32 bits, or
			// padding with zeros that no encoder writes.
			return 0, p, errIntOverflow
		}
	}
	return 0, p, errNeedMore
}

// view returns b as a string without copying it.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// bytesOf returns s's bytes without copying them; they are never written.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
