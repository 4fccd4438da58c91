package tracing

import "encoding/binary"

// AppendHex appends the id in lower-case hexadecimal, 32 digits.
func (t *TraceID) AppendHex(b []byte) []byte {
	b = AppendHex64(b, binary.BigEndian.Uint64(t[:8]))
	return AppendHex64(b, binary.BigEndian.Uint64(t[8:]))
}

// AppendHex appends the id in lower-case hexadecimal, 16 digits.
func (s *SpanID) AppendHex(b []byte) []byte {
	return AppendHex64(b, binary.BigEndian.Uint64(s[:]))
}

// AppendHex64 appends x in lower-case hexadecimal, 16 digits with leading
// zeros. Every propagated request writes two or three ids: eight digits
// at a time in a word, rather than encoding/hex's table look-up per digit
// (a sixth of what an untraced request cost the tracer).
func AppendHex64(b []byte, x uint64) []byte {
	var d [16]byte
	PutHex64(d[:], x)
	return append(b, d[:]...)
}

// PutHex64 writes x in lower-case hexadecimal into the first 16 bytes of
// d, for a caller that writes a fixed layout (W3C's traceparent) in
// place rather than appending piece by piece.
func PutHex64(d []byte, x uint64) {
	_ = d[15]
	binary.BigEndian.PutUint64(d[:8], hexDigits8(uint32(x>>32)))
	binary.BigEndian.PutUint64(d[8:16], hexDigits8(uint32(x)))
}

// hexDigits8 returns x's eight hexadecimal digits, the most significant
// in the word's high byte: each nibble is spread into a byte of its own,
// then bytes of 10 and above are moved on to 'a'.
func hexDigits8(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	letters := (v + 0x0606060606060606) >> 4 & 0x0101010101010101
	return v + 0x3030303030303030 + letters*('a'-'9'-1)
}
