// Package deflate is a deflate (RFC 1951) and gzip (RFC 1952) encoder
// with zlib's parameters: a window of 2^windowBits bytes, a hash table
// sized by the memory level, zlib's per-level match-finding table, its
// strategies (filtered, Huffman only, RLE, fixed codes) and its block
// decisions, after zlib's deflate.c and trees.c. Go's and klauspost's
// encoders always use a 32 KiB window and have no memory level or
// strategies; Envoy's gzip compressor exposes all of them, with a 4 KiB
// window by default.
package deflate

import (
	"encoding/binary"
	"math/bits"
)

const (
	minMatch = 3
	maxMatch = 258
	// minLookahead is the lookahead kept for a match and the insertion
	// of the string after it.
	minLookahead = maxMatch + minMatch + 1
	// tooFar: a match of 3 bytes further back than this is not worth
	// its distance code (at the lazy levels).
	tooFar = 4096
)

// The flush kinds, ordered as zlib ranks them.
const (
	noFlush   = 0
	syncFlush = 2
	finish    = 4
	// noFlushYet is a fresh stream's last flush: a first sync flush
	// always produces its empty block.
	noFlushYet = -2
)

// blockState is what a compress function ended with.
type blockState uint8

const (
	needMore blockState = iota
	blockDone
	finishDone
	// goOn is nextString's "a string is ready": the loop continues.
	goOn
)

// Encoder is a raw deflate encoder. Compressed bytes accumulate in its
// output, taken with Output.
type Encoder struct {
	level    int
	strategy Strategy
	cfg      levelConfig

	wSize, wMask int
	// window holds 2*wSize bytes: the history in the lower half,
	// lookahead filling the upper half until it slides down.
	window     []byte
	windowSize int
	// prev links each position to the previous one with the same hash;
	// head is each hash's latest position; 0 is "none".
	prev, head          []uint16
	hashMask, hashShift int
	insH                int

	// blockStart is the window position where the current block's
	// input starts (negative once slid out of the window).
	blockStart                    int
	strStart, lookahead           int
	matchLength, matchStart       int
	prevLength, prevMatch         int
	matchAvailable                bool
	maxChain, maxLazy, good, nice int
	insert                        int
	highWater                     int
	maxBlockSize                  int
	lastFlush                     int
	finished                      bool
	in                            []byte
	syms                          []uint32
	symEnd                        int
	h                             huffman
	bw                            bitWriter
}

// NewEncoder makes an encoder with zlib's deflateInit2 parameters.
func NewEncoder(o Options) (*Encoder, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Level == DefaultLevel {
		o.Level = 6
	}
	wbits := max(o.WindowBits, 9)
	hashBits := o.MemLevel + 7
	litBufSize := 1 << (o.MemLevel + 6)
	e := &Encoder{
		level:      o.Level,
		strategy:   o.Strategy,
		cfg:        configTable[o.Level],
		wSize:      1 << wbits,
		wMask:      1<<wbits - 1,
		windowSize: 2 << wbits,
		hashMask:   1<<hashBits - 1,
		hashShift:  (hashBits + minMatch - 1) / minMatch,
		symEnd:     litBufSize - 1,
		// zlib's pending buffer is 4 bytes a symbol; a stored block
		// (level 0) holds at most that less its header.
		maxBlockSize: min(0xffff, 4*litBufSize-5),
	}
	e.window = make([]byte, e.windowSize)
	e.prev = make([]uint16, e.wSize)
	e.head = make([]uint16, 1<<hashBits)
	e.syms = make([]uint32, 0, e.symEnd)
	e.h.init()
	e.Reset()
	return e, nil
}

// Reset starts a new stream with the same parameters, as deflateReset.
func (e *Encoder) Reset() {
	clear(e.head)
	e.maxChain, e.maxLazy, e.good, e.nice = e.cfg.maxChain, e.cfg.maxLazy, e.cfg.goodLength, e.cfg.niceLength
	e.strStart, e.blockStart, e.lookahead, e.insert = 0, 0, 0, 0
	e.matchLength, e.prevLength = minMatch-1, minMatch-1
	e.matchStart, e.prevMatch = 0, 0
	e.matchAvailable = false
	e.insH = 0
	e.highWater = 0
	e.lastFlush = noFlushYet
	e.finished = false
	e.in = nil
	e.syms = e.syms[:0]
	e.h.initBlock()
	e.bw = bitWriter{out: e.bw.out[:0]}
}

// Write compresses p; the encoder keeps what does not yet make a
// block.
func (e *Encoder) Write(p []byte) {
	if len(p) == 0 {
		return
	}
	e.in = p
	e.deflate(noFlush)
}

// Flush ends the output so far on a byte boundary with an empty stored
// block (zlib's Z_SYNC_FLUSH): the output decodes to all of the input.
// A second flush with no input in between adds nothing, as in zlib.
func (e *Encoder) Flush() { e.deflate(syncFlush) }

// Close ends the stream with a last block.
func (e *Encoder) Close() { e.deflate(finish) }

// Output returns the compressed bytes produced so far and forgets
// them; the slice is valid until the next call.
func (e *Encoder) Output() []byte {
	out := e.bw.out
	e.bw.out = e.bw.out[:0]
	return out
}

// pending is how many compressed bytes Output would return.
func (e *Encoder) pending() int { return len(e.bw.out) }

func (e *Encoder) deflate(flush int) {
	old := e.lastFlush
	e.lastFlush = flush
	if len(e.in) == 0 && flush != finish && flush <= old {
		return
	}
	if e.finished {
		e.in = nil
		return
	}
	if len(e.in) == 0 && e.lookahead == 0 && flush == noFlush {
		return
	}
	var bs blockState
	switch {
	case e.level == 0:
		bs = e.deflateStored(flush)
	case e.strategy == HuffmanOnly:
		bs = e.deflateHuff(flush)
	case e.strategy == RLE:
		bs = e.deflateRLE(flush)
	default:
		bs = e.deflateHashed(flush, e.cfg.fn == funcSlow)
	}
	switch {
	case bs == finishDone:
		e.finished = true
	case bs == blockDone && flush == syncFlush:
		e.emptyStoredBlock()
	}
}

// emptyStoredBlock is the sync flush marker: 000, padding, 00 00 ff ff.
func (e *Encoder) emptyStoredBlock() {
	e.bw.send(storedBlock<<1, 3)
	e.bw.windup()
	e.bw.out = append(e.bw.out, 0, 0, 0xff, 0xff)
}

// maxDist is the furthest a match may reach back: the window less the
// lookahead, so that no distance exceeds the window.
func (e *Encoder) maxDist() int { return e.wSize - minLookahead }

func (e *Encoder) updateHash(h int, c byte) int {
	return ((h << e.hashShift) ^ int(c)) & e.hashMask
}

// insertString adds the string at str to its hash chain and returns
// the chain's previous head.
func (e *Encoder) insertString(str int) int {
	e.insH = e.updateHash(e.insH, e.window[str+minMatch-1])
	m := e.head[e.insH]
	e.prev[str&e.wMask] = m
	e.head[e.insH] = uint16(str)
	return int(m)
}

// slideHash moves the hash chains down with the window.
func (e *Encoder) slideHash() {
	w := uint16(e.wSize)
	for i, m := range e.head {
		if m >= w {
			e.head[i] = m - w
		} else {
			e.head[i] = 0
		}
	}
	for i, m := range e.prev {
		if m >= w {
			e.prev[i] = m - w
		} else {
			e.prev[i] = 0
		}
	}
}

// fillWindow reads input into the window when the lookahead is short,
// sliding the window down by wSize when it is nearly full.
func (e *Encoder) fillWindow() {
	wsize := e.wSize
	for {
		more := e.windowSize - e.lookahead - e.strStart
		if e.strStart >= wsize+e.maxDist() {
			copy(e.window[:wsize-more], e.window[wsize:wsize+wsize-more])
			e.matchStart -= wsize
			e.strStart -= wsize
			e.blockStart -= wsize
			e.insert = min(e.insert, e.strStart)
			e.slideHash()
			more += wsize
		}
		if len(e.in) == 0 {
			break
		}
		at := e.strStart + e.lookahead
		n := copy(e.window[at:at+more], e.in)
		e.in = e.in[n:]
		e.lookahead += n
		// Start the hash with the strings left from the last input.
		if e.lookahead+e.insert >= minMatch {
			str := e.strStart - e.insert
			e.insH = int(e.window[str])
			e.insH = e.updateHash(e.insH, e.window[str+1])
			for e.insert > 0 {
				e.insH = e.updateHash(e.insH, e.window[str+minMatch-1])
				e.prev[str&e.wMask] = e.head[e.insH]
				e.head[e.insH] = uint16(str)
				str++
				e.insert--
				if e.lookahead+e.insert < minMatch {
					break
				}
			}
		}
		if e.lookahead >= minLookahead || len(e.in) == 0 {
			break
		}
	}
	// Zero the bytes after the data that the match finder may read
	// (up to maxMatch past it) and that were never written, so that
	// output does not depend on stale memory.
	if e.highWater < e.windowSize {
		curr := e.strStart + e.lookahead
		if e.highWater < curr {
			n := min(e.windowSize-curr, maxMatch)
			clear(e.window[curr : curr+n])
			e.highWater = curr + n
		} else if e.highWater < curr+maxMatch {
			n := min(curr+maxMatch-e.highWater, e.windowSize-e.highWater)
			clear(e.window[e.highWater : e.highWater+n])
			e.highWater += n
		}
	}
}

// longestMatch follows the hash chain from curMatch and returns the
// longest match found (at least prevLength, which it must beat), with
// its start in matchStart; never longer than the lookahead.
func (e *Encoder) longestMatch(curMatch int) int {
	chain := e.maxChain
	win := e.window
	scan := e.strStart
	bestLen := e.prevLength
	nice := e.nice
	limit := 0
	if e.strStart > e.maxDist() {
		limit = e.strStart - e.maxDist()
	}
	if e.prevLength >= e.good {
		chain >>= 2
	}
	if nice > e.lookahead {
		nice = e.lookahead
	}
	// The match finder reads up to maxMatch bytes past scan, which
	// fillWindow keeps inside the window.
	cur := win[scan : scan+maxMatch+1]
	s0, s1 := cur[0], cur[1]
	scanEnd1, scanEnd := cur[bestLen-1], cur[bestLen]
	prev, wmask := e.prev, e.wMask
	for {
		// A candidate must match the current best's last two bytes
		// and the first two; only then compare the rest.
		if i := curMatch + bestLen; i < len(win) && win[i] == scanEnd && win[i-1] == scanEnd1 &&
			win[curMatch] == s0 && win[curMatch+1] == s1 {
			n := matchLen(cur, win[curMatch:curMatch+maxMatch])
			if n > bestLen {
				e.matchStart = curMatch
				bestLen = n
				if n >= nice {
					break
				}
				scanEnd1, scanEnd = cur[bestLen-1], cur[bestLen]
			}
		}
		curMatch = int(prev[curMatch&wmask])
		chain--
		if curMatch <= limit || chain == 0 {
			break
		}
	}
	return min(bestLen, e.lookahead)
}

// matchLen is the length of the common prefix of a and b (both
// maxMatch long), which share their first two bytes.
func matchLen(a, b []byte) int {
	a, b = a[:maxMatch], b[:maxMatch]
	n := 2
	for n+8 <= maxMatch {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for n < maxMatch && a[n] == b[n] {
		n++
	}
	return n
}

// tallyLit records a literal; it reports a full symbol buffer.
func (e *Encoder) tallyLit(c byte) bool {
	e.syms = append(e.syms, uint32(c))
	e.h.ltree.freq[c]++
	return len(e.syms) == e.symEnd
}

// tallyDist records a match of length lc+3 at dist; it reports a full
// symbol buffer.
func (e *Encoder) tallyDist(dist, lc int) bool {
	e.syms = append(e.syms, uint32(dist)<<8|uint32(lc))
	e.h.ltree.freq[int(tbl.lengthCode[lc])+literals+1]++
	e.h.dtree.freq[tbl.dCode(dist-1)]++
	return len(e.syms) == e.symEnd
}

// flushBlock ends the current block at strStart.
func (e *Encoder) flushBlock(last bool) {
	var buf []byte
	if e.blockStart >= 0 {
		buf = e.window[e.blockStart:e.strStart]
	}
	e.flushBlockData(buf, e.strStart-e.blockStart, last)
	e.blockStart = e.strStart
}

// flushBlockData sends the block as stored, fixed or dynamic, whichever
// is smallest (fixed only with the Fixed strategy; stored only while
// its input, buf, is still in the window), as zlib's _tr_flush_block.
func (e *Encoder) flushBlockData(buf []byte, storedLen int, last bool) {
	h := &e.h
	var optLenb, staticLenb, maxBLIndex int
	if e.level > 0 {
		h.buildTree(&h.ltree)
		h.buildTree(&h.dtree)
		maxBLIndex = h.buildBLTree()
		optLenb = (h.optLen + 3 + 7) >> 3
		staticLenb = (h.staticLen + 3 + 7) >> 3
		if staticLenb <= optLenb || e.strategy == Fixed {
			optLenb = staticLenb
		}
	} else {
		optLenb = storedLen + 5
		staticLenb = optLenb
	}
	lastBit := uint16(0)
	if last {
		lastBit = 1
	}
	switch {
	case storedLen+4 <= optLenb && buf != nil:
		e.bw.send(storedBlock<<1+lastBit, 3)
		e.bw.windup()
		e.bw.out = binary.LittleEndian.AppendUint16(e.bw.out, uint16(storedLen))
		e.bw.out = binary.LittleEndian.AppendUint16(e.bw.out, ^uint16(storedLen))
		e.bw.out = append(e.bw.out, buf...)
	case staticLenb == optLenb:
		e.bw.send(staticTrees<<1+lastBit, 3)
		compressBlock(&e.bw, e.syms, tbl.staticLCode[:], tbl.staticLLen[:], tbl.staticDCode[:], tbl.staticDLen[:])
	default:
		e.bw.send(dynTrees<<1+lastBit, 3)
		h.sendAllTrees(&e.bw, h.ltree.maxCode+1, h.dtree.maxCode+1, maxBLIndex+1)
		compressBlock(&e.bw, e.syms, h.ltree.code, h.ltree.len, h.dtree.code, h.dtree.len)
	}
	h.initBlock()
	e.syms = e.syms[:0]
	if last {
		e.bw.windup()
	}
}

// endInput finishes a compress function once the input is used up.
func (e *Encoder) endInput(flush int, insert int) blockState {
	e.insert = insert
	if flush == finish {
		e.flushBlock(true)
		return finishDone
	}
	if len(e.syms) > 0 {
		e.flushBlock(false)
	}
	return blockDone
}
