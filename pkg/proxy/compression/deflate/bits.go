package deflate

// bitWriter appends bits, least significant first, to out, as deflate
// packs them.
type bitWriter struct {
	out   []byte
	bits  uint64
	nbits uint
}

// send appends the low n bits of v (n <= 16).
func (b *bitWriter) send(v uint16, n uint) {
	b.bits |= uint64(v) << b.nbits
	b.nbits += n
	if b.nbits >= 48 {
		b.out = append(b.out, byte(b.bits), byte(b.bits>>8), byte(b.bits>>16), byte(b.bits>>24), byte(b.bits>>32), byte(b.bits>>40))
		b.bits >>= 48
		b.nbits -= 48
	}
}

// windup pads the last byte with zero bits and writes out everything.
func (b *bitWriter) windup() {
	for n := int(b.nbits); n > 0; n -= 8 {
		b.out = append(b.out, byte(b.bits))
		b.bits >>= 8
	}
	b.bits, b.nbits = 0, 0
}

// sendTree sends t's code lengths with the code-length code.
func (h *huffman) sendTree(b *bitWriter, t *tree, maxCode int) {
	bl := &h.bltree
	code := func(c int) { b.send(bl.code[c], uint(bl.len[c])) }
	forEachRun(t.len, maxCode, func(curLen, count, prevLen, minCount int) {
		switch {
		case count < minCount:
			for ; count > 0; count-- {
				code(curLen)
			}
		case curLen != 0:
			if curLen != prevLen {
				code(curLen)
				count--
			}
			code(rep3to6)
			b.send(uint16(count-3), 2)
		case count <= 10:
			code(repz3to10)
			b.send(uint16(count-3), 3)
		default:
			code(repz11to138)
			b.send(uint16(count-11), 7)
		}
	})
}

// sendAllTrees sends a dynamic block's header after its type bits.
func (h *huffman) sendAllTrees(b *bitWriter, lcodes, dcodes, blcodes int) {
	b.send(uint16(lcodes-257), 5)
	b.send(uint16(dcodes-1), 5)
	b.send(uint16(blcodes-4), 4)
	for rank := 0; rank < blcodes; rank++ {
		b.send(h.bltree.len[blOrder[rank]], 3)
	}
	h.sendTree(b, &h.ltree, lcodes-1)
	h.sendTree(b, &h.dtree, dcodes-1)
}

// compressBlock sends the block's symbols with the given codes.
func compressBlock(b *bitWriter, syms []uint32, lcode, llen, dcode, dlen []uint16) {
	for _, s := range syms {
		lc := int(s & 0xff)
		dist := int(s >> 8)
		if dist == 0 {
			b.send(lcode[lc], uint(llen[lc]))
			continue
		}
		code := int(tbl.lengthCode[lc])
		b.send(lcode[code+literals+1], uint(llen[code+literals+1]))
		if extra := extraLBits[code]; extra != 0 {
			b.send(uint16(lc-int(tbl.baseLength[code])), uint(extra))
		}
		dist--
		code = tbl.dCode(dist)
		b.send(dcode[code], uint(dlen[code]))
		if extra := extraDBits[code]; extra != 0 {
			b.send(uint16(dist-int(tbl.baseDist[code])), uint(extra))
		}
	}
	b.send(lcode[endBlock], uint(llen[endBlock]))
}
