package deflate

// The Huffman side of the encoder, after zlib's trees.c: the symbol
// tables, the length-limited code construction (heap by frequency, ties
// broken by subtree depth) and the choice, per block, between a stored,
// a fixed-code and a dynamic-code block by their exact bit counts.

const (
	maxBits     = 15  // no code is longer
	maxBLBits   = 7   // no code-length code is longer
	lengthCodes = 29  // length codes, not counting the end-of-block code
	literals    = 256 // literal bytes
	lCodes      = literals + 1 + lengthCodes
	dCodes      = 30
	blCodes     = 19
	heapSize    = 2*lCodes + 1
	endBlock    = 256
	rep3to6     = 16 // repeat the previous length 3 to 6 times
	repz3to10   = 17 // repeat a zero length 3 to 10 times
	repz11to138 = 18 // repeat a zero length 11 to 138 times

	storedBlock = 0
	staticTrees = 1
	dynTrees    = 2
)

var (
	extraLBits  = [lengthCodes]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	extraDBits  = [dCodes]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	extraBLBits = [blCodes]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7}
	blOrder     = [blCodes]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// tables are the constant lookup tables, computed once per process by
// newTables and shared read-only.
type tables struct {
	// lengthCode maps match length-3 (0..255) to its length code.
	lengthCode [256]uint8
	// distCode maps distance-1 to its distance code: the first 256
	// entries directly, the next 256 for (distance-1)>>7.
	distCode   [512]uint8
	baseLength [lengthCodes]uint16
	baseDist   [dCodes]uint16
	// The fixed codes (RFC 1951 3.2.6), bit-reversed as they are sent.
	staticLCode, staticLLen [lCodes + 2]uint16
	staticDCode, staticDLen [dCodes]uint16
}

var tbl = newTables()

func newTables() *tables {
	t := &tables{}
	length := 0
	code := 0
	for code = 0; code < lengthCodes-1; code++ {
		t.baseLength[code] = uint16(length)
		for n := 0; n < 1<<extraLBits[code]; n++ {
			t.lengthCode[length] = uint8(code)
			length++
		}
	}
	// Length 258 (index 255) has its own code, 285, with no extra bits.
	t.lengthCode[length-1] = uint8(code)
	dist := 0
	for code = 0; code < 16; code++ {
		t.baseDist[code] = uint16(dist)
		for n := 0; n < 1<<extraDBits[code]; n++ {
			t.distCode[dist] = uint8(code)
			dist++
		}
	}
	dist >>= 7
	for ; code < dCodes; code++ {
		t.baseDist[code] = uint16(dist << 7)
		for n := 0; n < 1<<(extraDBits[code]-7); n++ {
			t.distCode[256+dist] = uint8(code)
			dist++
		}
	}
	var blCount [maxBits + 1]uint16
	for n := 0; n < lCodes+2; n++ {
		switch {
		case n <= 143:
			t.staticLLen[n] = 8
		case n <= 255:
			t.staticLLen[n] = 9
		case n <= 279:
			t.staticLLen[n] = 7
		default:
			t.staticLLen[n] = 8
		}
		blCount[t.staticLLen[n]]++
	}
	genCodes(t.staticLCode[:], t.staticLLen[:], lCodes+1, &blCount)
	for n := 0; n < dCodes; n++ {
		t.staticDLen[n] = 5
		t.staticDCode[n] = bitReverse(uint16(n), 5)
	}
	return t
}

// dCode is the distance code of dist-1.
func (t *tables) dCode(dist int) int {
	if dist < 256 {
		return int(t.distCode[dist])
	}
	return int(t.distCode[256+(dist>>7)])
}

// bitReverse reverses the low n bits of code.
func bitReverse(code uint16, n int) uint16 {
	var res uint16
	for ; n > 0; n-- {
		res = res<<1 | code&1
		code >>= 1
	}
	return res
}

// genCodes assigns the canonical codes for the lengths in lens[0..maxCode],
// given the count of codes of each length.
func genCodes(codes, lens []uint16, maxCode int, blCount *[maxBits + 1]uint16) {
	var nextCode [maxBits + 1]uint16
	var code uint16
	for bits := 1; bits <= maxBits; bits++ {
		code = (code + blCount[bits-1]) << 1
		nextCode[bits] = code
	}
	for n := 0; n <= maxCode; n++ {
		l := lens[n]
		if l == 0 {
			continue
		}
		codes[n] = bitReverse(nextCode[l], int(l))
		nextCode[l]++
	}
}

// tree is one dynamic Huffman tree under construction: leaves first,
// then the internal nodes.
type tree struct {
	freq, code, len, dad []uint16
	// maxCode is the largest leaf with a non-zero frequency.
	maxCode int
	// static lengths (nil for the code-length tree) for static_len.
	staticLen []uint16
	extra     []uint8
	extraBase int
	elems     int
	maxLength int
}

func newTree(size, elems, maxLength int, staticLen []uint16, extra []uint8, extraBase int) tree {
	return tree{
		freq: make([]uint16, size), code: make([]uint16, size), len: make([]uint16, size), dad: make([]uint16, size),
		staticLen: staticLen, extra: extra, extraBase: extraBase, elems: elems, maxLength: maxLength,
	}
}

// huffman is the per-block tree state: the three trees and the heap
// that builds them.
type huffman struct {
	ltree, dtree, bltree tree
	heap                 [heapSize]int
	heapLen, heapMax     int
	depth                [heapSize]uint8
	blCount              [maxBits + 1]uint16
	// optLen and staticLen are the block's bit count with the dynamic
	// and with the fixed codes.
	optLen, staticLen int
}

func (h *huffman) init() {
	h.ltree = newTree(heapSize, lCodes, maxBits, tbl.staticLLen[:], extraLBits[:], literals+1)
	h.dtree = newTree(2*dCodes+1, dCodes, maxBits, tbl.staticDLen[:], extraDBits[:], 0)
	h.bltree = newTree(2*blCodes+1, blCodes, maxBLBits, nil, extraBLBits[:], 0)
	h.initBlock()
}

// initBlock starts the counts of a new block.
func (h *huffman) initBlock() {
	clear(h.ltree.freq[:lCodes])
	clear(h.dtree.freq[:dCodes])
	clear(h.bltree.freq[:blCodes])
	h.ltree.freq[endBlock] = 1
	h.optLen, h.staticLen = 0, 0
}

// smaller orders heap nodes by frequency, then by depth.
func smaller(t *tree, n, m int, depth *[heapSize]uint8) bool {
	return t.freq[n] < t.freq[m] || (t.freq[n] == t.freq[m] && depth[n] <= depth[m])
}

func (h *huffman) downHeap(t *tree, k int) {
	v := h.heap[k]
	j := k << 1
	for j <= h.heapLen {
		if j < h.heapLen && smaller(t, h.heap[j+1], h.heap[j], &h.depth) {
			j++
		}
		if smaller(t, v, h.heap[j], &h.depth) {
			break
		}
		h.heap[k] = h.heap[j]
		k = j
		j <<= 1
	}
	h.heap[k] = v
}

// buildTree computes t's code lengths and codes from its frequencies,
// adding the block's lengths to optLen and staticLen.
func (h *huffman) buildTree(t *tree) {
	h.heapLen, h.heapMax = 0, heapSize
	maxCode := -1
	for n := 0; n < t.elems; n++ {
		if t.freq[n] != 0 {
			h.heapLen++
			h.heap[h.heapLen] = n
			maxCode = n
			h.depth[n] = 0
		} else {
			t.len[n] = 0
		}
	}
	// The format needs at least one distance code, and a code of
	// length 1 for one symbol: force at least two codes.
	for h.heapLen < 2 {
		node := 0
		if maxCode < 2 {
			maxCode++
			node = maxCode
		}
		h.heapLen++
		h.heap[h.heapLen] = node
		t.freq[node] = 1
		h.depth[node] = 0
		h.optLen--
		if t.staticLen != nil {
			h.staticLen -= int(t.staticLen[node])
		}
	}
	t.maxCode = maxCode
	for n := h.heapLen / 2; n >= 1; n-- {
		h.downHeap(t, n)
	}
	node := t.elems
	for {
		n := h.heap[1]
		h.heap[1] = h.heap[h.heapLen]
		h.heapLen--
		h.downHeap(t, 1)
		m := h.heap[1]
		h.heapMax--
		h.heap[h.heapMax] = n
		h.heapMax--
		h.heap[h.heapMax] = m
		t.freq[node] = t.freq[n] + t.freq[m]
		h.depth[node] = max(h.depth[n], h.depth[m]) + 1
		t.dad[n], t.dad[m] = uint16(node), uint16(node)
		h.heap[1] = node
		node++
		h.downHeap(t, 1)
		if h.heapLen < 2 {
			break
		}
	}
	h.heapMax--
	h.heap[h.heapMax] = h.heap[1]
	h.genBitLen(t)
	genCodes(t.code, t.len, maxCode, &h.blCount)
}

// genBitLen computes the code lengths from the tree in the heap, limits
// them to t.maxLength as zlib does, and counts the block's bits.
func (h *huffman) genBitLen(t *tree) {
	clear(h.blCount[:])
	t.len[h.heap[h.heapMax]] = 0 // the root
	overflow := 0
	hh := h.heapMax + 1
	for ; hh < heapSize; hh++ {
		n := h.heap[hh]
		bits := int(t.len[t.dad[n]]) + 1
		if bits > t.maxLength {
			bits = t.maxLength
			overflow++
		}
		t.len[n] = uint16(bits)
		if n > t.maxCode {
			continue // an internal node
		}
		h.blCount[bits]++
		xbits := 0
		if n >= t.extraBase {
			xbits = int(t.extra[n-t.extraBase])
		}
		f := int(t.freq[n])
		h.optLen += f * (bits + xbits)
		if t.staticLen != nil {
			h.staticLen += f * (int(t.staticLen[n]) + xbits)
		}
	}
	if overflow == 0 {
		return
	}
	// Move leaves up from the deepest level until the counts fit.
	for overflow > 0 {
		bits := t.maxLength - 1
		for h.blCount[bits] == 0 {
			bits--
		}
		h.blCount[bits]--
		h.blCount[bits+1] += 2
		h.blCount[t.maxLength]--
		overflow -= 2
	}
	// Give the leaves, in frequency order, the new lengths.
	hh = heapSize
	for bits := t.maxLength; bits != 0; bits-- {
		n := int(h.blCount[bits])
		for n != 0 {
			hh--
			m := h.heap[hh]
			if m > t.maxCode {
				continue
			}
			if int(t.len[m]) != bits {
				h.optLen += (bits - int(t.len[m])) * int(t.freq[m])
				t.len[m] = uint16(bits)
			}
			n--
		}
	}
}

// forEachRun walks the code lengths lens[0..maxCode] in runs as the
// code-length code sends them (runs of at most 138 zeros or 6 repeats
// of a length, cut where zlib cuts them), calling fn with each run's
// length, count, the previous run's length and the shortest count worth
// a repeat code. lens[maxCode+1] is overwritten with a guard.
func forEachRun(lens []uint16, maxCode int, fn func(curLen, count, prevLen, minCount int)) {
	prevLen := -1
	nextLen := int(lens[0])
	count := 0
	maxCount, minCount := 7, 4
	if nextLen == 0 {
		maxCount, minCount = 138, 3
	}
	lens[maxCode+1] = 0xffff // guard
	for n := 0; n <= maxCode; n++ {
		curLen := nextLen
		nextLen = int(lens[n+1])
		count++
		if count < maxCount && curLen == nextLen {
			continue
		}
		fn(curLen, count, prevLen, minCount)
		count = 0
		prevLen = curLen
		switch {
		case nextLen == 0:
			maxCount, minCount = 138, 3
		case curLen == nextLen:
			maxCount, minCount = 6, 3
		default:
			maxCount, minCount = 7, 4
		}
	}
}

// scanTree counts the code-length codes that will send t's lengths.
func (h *huffman) scanTree(t *tree, maxCode int) {
	bl := h.bltree.freq
	forEachRun(t.len, maxCode, func(curLen, count, prevLen, minCount int) {
		switch {
		case count < minCount:
			bl[curLen] += uint16(count)
		case curLen != 0:
			if curLen != prevLen {
				bl[curLen]++
			}
			bl[rep3to6]++
		case count <= 10:
			bl[repz3to10]++
		default:
			bl[repz11to138]++
		}
	})
}

// buildBLTree builds the code-length tree and returns the index in
// blOrder of the last length code to send.
func (h *huffman) buildBLTree() int {
	h.scanTree(&h.ltree, h.ltree.maxCode)
	h.scanTree(&h.dtree, h.dtree.maxCode)
	h.buildTree(&h.bltree)
	maxBLIndex := blCodes - 1
	for ; maxBLIndex >= 3; maxBLIndex-- {
		if h.bltree.len[blOrder[maxBLIndex]] != 0 {
			break
		}
	}
	h.optLen += 3*(maxBLIndex+1) + 5 + 5 + 4
	return maxBLIndex
}
