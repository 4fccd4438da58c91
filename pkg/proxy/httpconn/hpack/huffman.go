package hpack

import "errors"

// ErrInvalidHuffman: a Huffman-coded string holds EOS, ends inside a
// symbol, or is padded with more than seven bits or with bits that are not
// EOS's (RFC 7541 §5.2).
var ErrInvalidHuffman = errors.New("hpack: invalid Huffman-encoded data")

// huffMaxBits is the longest code's length (EOS's).
const huffMaxBits = 30

// huffFastBits is how many bits huffFast looks up at once: codes that
// short cover every character of a usual header value.
const huffFastBits = 9

// huffEOS is the EOS symbol's index in huffSyms' values.
const huffEOS = 256

// appendHuffman appends the decoding of the Huffman-coded src to dst. With
// max > 0, a string decoding to more than max bytes fails with
// ErrStringLength.
//
// Bits gather in acc, 31 to 64 at a time. The next symbol is looked up by
// the next huffFastBits bits in huffFast; a longer code is found with the
// code being canonical (see huffman_gen_test.go): the codes of one length
// are consecutive numbers and every code of n bits, left-aligned, is below
// every longer one, so the symbol's length is the least n whose bound
// exceeds the next huffMaxBits bits, and its value picks it from
// huffSyms. Bits past the input's end are taken as ones: a symbol that is
// all there does not look at them, and one that is not comes out longer
// than the bits left.
func appendHuffman(dst, src []byte, max int) ([]byte, error) {
	var acc uint64
	nbits := uint(0)
	start := len(dst)
	i := 0
	for {
		if nbits < huffMaxBits {
			for nbits <= 56 && i < len(src) {
				acc = acc<<8 | uint64(src[i])
				i++
				nbits += 8
			}
			if nbits == 0 {
				break
			}
		}
		// The usual case: a short code, looked up by the next
		// huffFastBits bits, or by the last ones padded with ones: a
		// symbol of no more bits than are left is one of those short
		// codes. (The shifts' "&63", a no-op, spares the compiler's
		// check for shifts of 64 bits or more.)
		if nbits < huffFastBits {
			pad := huffFastBits - nbits
			e := huffFast[uint32(acc<<pad|(1<<pad-1))&(1<<huffFastBits-1)]
			if e == 0 || uint(e>>8) > nbits {
				// Only padding is left (the input is all read):
				// fewer than eight bits, all ones (EOS's first
				// bits).
				if nbits > 7 || acc&(1<<nbits-1) != 1<<nbits-1 {
					return dst, ErrInvalidHuffman
				}
				break
			}
			dst = append(dst, byte(e))
			nbits -= uint(e >> 8)
			continue
		}
		if e := huffFast[uint32(acc>>((nbits-huffFastBits)&63))&(1<<huffFastBits-1)]; e != 0 {
			dst = append(dst, byte(e))
			nbits -= uint(e >> 8)
			continue
		}
		// A code longer than huffFastBits.
		var code uint32 // the next huffMaxBits bits
		if nbits >= huffMaxBits {
			code = uint32(acc>>((nbits-huffMaxBits)&63)) & (1<<huffMaxBits - 1)
		} else {
			pad := huffMaxBits - nbits
			code = uint32(acc<<pad)&(1<<huffMaxBits-1) | (1<<pad - 1)
		}
		n := uint(huffFastBits + 1)
		for code >= huffLimit[n] {
			n++
		}
		sym := huffSyms[huffBase[n]+int32(code>>(huffMaxBits-n))]
		if n > nbits {
			// The input ends inside the code (padding longer than
			// seven bits, at least).
			return dst, ErrInvalidHuffman
		}
		if sym == huffEOS {
			return dst, ErrInvalidHuffman
		}
		dst = append(dst, byte(sym))
		nbits -= n
	}
	// Checked once at the end: src, whose length the caller bounds, can
	// only decode to 8/5 of it.
	if max > 0 && len(dst)-start > max {
		return dst, ErrStringLength
	}
	return dst, nil
}
