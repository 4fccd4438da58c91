package http1

// A header value is checked eight bytes at a time while every byte is of
// the common kind (visible ASCII, space, obs-text): a few arithmetic
// operations a word instead of a table load and a test a byte. The first
// word with anything else (a tab, an invalid byte, a line end) goes to the
// byte loop, which decides, so that the word check only ever accepts what
// the loop accepts.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows  = 0x7f7f7f7f7f7f7f7f
)

// nonZeroBytes has the high bit of each byte of x that is not zero set,
// and no other bit: exact for every byte, no carry crosses a byte.
func nonZeroBytes(x uint64) uint64 {
	return ((x & lows) + lows | x) & highs
}

// plainValueWord reports whether the eight bytes of x are all field-vchar,
// space or obs-text: no control byte (a tab included, which the byte
// loop accepts) and no DEL.
func plainValueWord(x uint64) bool {
	notCtl := ((x & lows) + 0x60*ones | x) & highs // at least 0x20
	notDel := nonZeroBytes(x ^ 0x7f*ones)
	return notCtl&notDel == highs
}
