package deflate

import (
	"errors"
	"fmt"
)

// blockInfo is what the test-side decoder saw of one deflate stream.
type blockInfo struct {
	// types counts blocks by BTYPE (0 stored, 1 fixed, 2 dynamic).
	types [3]int
	// maxDist is the largest match distance.
	maxDist int
	out     []byte
}

// bitReader reads deflate's bit order.
type bitReader struct {
	in    []byte
	pos   int
	bit   uint
	fault error
}

func (r *bitReader) bits(n int) int {
	v := 0
	for i := 0; i < n; i++ {
		if r.pos >= len(r.in) {
			r.fault = errors.New("unexpected end of stream")
			return 0
		}
		v |= int(r.in[r.pos]>>r.bit&1) << i
		r.bit++
		if r.bit == 8 {
			r.bit, r.pos = 0, r.pos+1
		}
	}
	return v
}

// huffDecoder decodes a canonical code from its lengths, bit by bit.
type huffDecoder struct {
	count  [16]int
	symbol []int
}

func newHuffDecoder(lens []int) huffDecoder {
	var d huffDecoder
	for _, l := range lens {
		d.count[l]++
	}
	d.count[0] = 0
	var offs [16]int
	for l := 1; l < 16; l++ {
		offs[l] = offs[l-1] + d.count[l-1]
	}
	d.symbol = make([]int, len(lens))
	for s, l := range lens {
		if l != 0 {
			d.symbol[offs[l]] = s
			offs[l]++
		}
	}
	return d
}

func (d *huffDecoder) decode(r *bitReader) int {
	code, first, index := 0, 0, 0
	for l := 1; l < 16; l++ {
		code |= r.bits(1)
		count := d.count[l]
		if code-count < first {
			return d.symbol[index+(code-first)]
		}
		index += count
		first = (first + count) << 1
		code <<= 1
		if r.fault != nil {
			return -1
		}
	}
	r.fault = errors.New("bad code")
	return -1
}

var (
	lenBase  = [29]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	distBase = [30]int{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
)

// inspect decodes a raw deflate stream independently of the encoder
// (and of compress/flate), recording block types and distances.
func inspect(in []byte) (blockInfo, error) {
	var info blockInfo
	r := &bitReader{in: in}
	for {
		last := r.bits(1)
		typ := r.bits(2)
		if r.fault != nil {
			return info, r.fault
		}
		if typ == 3 {
			return info, errors.New("block type 3")
		}
		info.types[typ]++
		switch typ {
		case 0:
			if r.bit != 0 {
				r.bit, r.pos = 0, r.pos+1
			}
			n := r.bits(16)
			if nn := r.bits(16); nn != n^0xffff || r.fault != nil {
				return info, errors.New("bad stored length")
			}
			if r.pos+n > len(in) {
				return info, errors.New("stored block past the end")
			}
			info.out = append(info.out, in[r.pos:r.pos+n]...)
			r.pos += n
		default:
			lit, dist := fixedDecoders()
			if typ == 2 {
				var err error
				if lit, dist, err = dynamicDecoders(r); err != nil {
					return info, err
				}
			}
			for {
				sym := lit.decode(r)
				if r.fault != nil {
					return info, r.fault
				}
				if sym < 256 {
					info.out = append(info.out, byte(sym))
					continue
				}
				if sym == 256 {
					break
				}
				sym -= 257
				if sym >= 29 {
					return info, errors.New("bad length code")
				}
				length := lenBase[sym] + r.bits(int(extraLBits[sym]))
				dc := dist.decode(r)
				if dc < 0 || dc >= 30 {
					return info, errors.New("bad distance code")
				}
				d := distBase[dc] + r.bits(int(extraDBits[dc]))
				if d > len(info.out) {
					return info, fmt.Errorf("distance %d before the start", d)
				}
				info.maxDist = max(info.maxDist, d)
				for range length {
					info.out = append(info.out, info.out[len(info.out)-d])
				}
			}
		}
		if last == 1 {
			return info, nil
		}
	}
}

func fixedDecoders() (huffDecoder, huffDecoder) {
	lens := make([]int, 288)
	for i := range lens {
		lens[i] = int(fixedLitLenBits(i))
	}
	d := make([]int, 30)
	for i := range d {
		d[i] = 5
	}
	return newHuffDecoder(lens), newHuffDecoder(d)
}

func dynamicDecoders(r *bitReader) (huffDecoder, huffDecoder, error) {
	nlen, ndist, ncode := r.bits(5)+257, r.bits(5)+1, r.bits(4)+4
	cl := make([]int, 19)
	for i := 0; i < ncode; i++ {
		cl[blOrder[i]] = r.bits(3)
	}
	cd := newHuffDecoder(cl)
	lens := make([]int, 0, nlen+ndist)
	for len(lens) < nlen+ndist {
		sym := cd.decode(r)
		if r.fault != nil {
			return huffDecoder{}, huffDecoder{}, r.fault
		}
		switch {
		case sym < 16:
			lens = append(lens, sym)
		case sym == 16:
			if len(lens) == 0 {
				return huffDecoder{}, huffDecoder{}, errors.New("repeat with no length")
			}
			for n := 3 + r.bits(2); n > 0; n-- {
				lens = append(lens, lens[len(lens)-1])
			}
		case sym == 17:
			for n := 3 + r.bits(3); n > 0; n-- {
				lens = append(lens, 0)
			}
		default:
			for n := 11 + r.bits(7); n > 0; n-- {
				lens = append(lens, 0)
			}
		}
	}
	if len(lens) != nlen+ndist {
		return huffDecoder{}, huffDecoder{}, errors.New("code lengths overrun")
	}
	return newHuffDecoder(lens[:nlen]), newHuffDecoder(lens[nlen:]), nil
}
