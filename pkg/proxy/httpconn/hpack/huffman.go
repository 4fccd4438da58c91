package hpack

import "errors"

// ErrInvalidHuffman: a Huffman-coded string holds EOS, ends inside a
// symbol, or is padded with more than seven bits or with bits that are not
// EOS's (RFC 7541 §5.2).
var ErrInvalidHuffman = errors.New("hpack: invalid Huffman-encoded data")

// huffMaxBits is the longest code's length (EOS's).
const huffMaxBits = 30

// huffEOS is the EOS symbol's index in huffSyms' values.
const huffEOS = 256

// appendHuffman appends the decoding of the Huffman-coded src to dst. With
// max > 0, a string decoding to more than max bytes fails with
// ErrStringLength.
//
// The code is canonical (see huffman_gen_test.go): the codes of one length
// are consecutive numbers, and every code of n bits, left-aligned, is
// below every longer one. Bits are gathered in acc; the next symbol's
// length is the least n whose bound exceeds the next huffMaxBits bits
// (missing bits taken as ones, which a symbol that is all there does not
// look at), and its value picks it from huffSyms. Symbols of five to eight
// bits, most of a header's characters, take one to four comparisons.
func appendHuffman(dst, src []byte, max int) ([]byte, error) {
	var acc uint64
	nbits := uint(0)
	start := len(dst)
	for _, b := range src {
		acc = acc<<8 | uint64(b)
		nbits += 8
		for nbits >= 5 {
			var code uint32
			if nbits >= huffMaxBits {
				code = uint32(acc>>(nbits-huffMaxBits)) & (1<<huffMaxBits - 1)
			} else {
				pad := huffMaxBits - nbits
				code = uint32(acc<<pad)&(1<<huffMaxBits-1) | (1<<pad - 1)
			}
			n := uint(5)
			for code >= huffLimit[n] {
				n++
			}
			if n > nbits {
				break
			}
			sym := huffSyms[huffBase[n]+int32(code>>(huffMaxBits-n))]
			if sym == huffEOS {
				return dst, ErrInvalidHuffman
			}
			if max > 0 && len(dst)-start >= max {
				return dst, ErrStringLength
			}
			dst = append(dst, byte(sym))
			nbits -= n
		}
		// At most 29 unused bits are left, so acc keeps what matters in
		// its low 37.
		acc &= 1<<nbits - 1
	}
	// What is left is padding: fewer than eight bits, all ones (EOS's
	// first bits).
	if nbits > 7 || acc != 1<<nbits-1 {
		return dst, ErrInvalidHuffman
	}
	return dst, nil
}
