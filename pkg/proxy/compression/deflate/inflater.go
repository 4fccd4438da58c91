package deflate

import (
	"errors"
	"io"
)

// Errors of a broken deflate stream, named after zlib's messages so that
// logs read the same as Envoy's.
var (
	ErrDistanceTooFar = errors.New("invalid distance too far back")
	ErrBlockType      = errors.New("invalid block type")
	ErrStoredLength   = errors.New("invalid stored block lengths")
	ErrCode           = errors.New("invalid code")
	ErrCodeLengths    = errors.New("invalid code lengths set")
)

// historySize is the ring of decoded bytes that matches copy from: the
// largest window deflate has.
const historySize = 1 << 15

// inflateState is where the decoder stands between two calls.
type inflateState uint8

const (
	stateBlockHeader inflateState = iota
	stateStored
	stateHuffman
	stateDone
)

// Inflater decodes a raw deflate stream (RFC 1951) read from a byte
// source, refusing matches farther back than its window as zlib's inflate
// does with a smaller windowBits. Go's own inflate takes any distance up
// to 32 KiB, so a gzip decompressor configured with window_bits below 15
// would accept streams Envoy's refuses; this one refuses them the same
// way, with "invalid distance too far back".
//
// It is not the hot path: the decompressor uses Go's inflate for the
// default window (15) and this only for smaller ones.
type Inflater struct {
	src io.ByteReader
	// bits holds nbits unread bits of the stream, the next one lowest.
	bits  uint64
	nbits uint
	// window is the farthest distance allowed (1 << windowBits).
	window int
	// hist is the ring of decoded bytes; wpos is where the next byte
	// goes, rpos the first byte not yet returned; total counts the
	// stream's bytes so far (distances may not reach before its start).
	hist       [historySize]byte
	wpos, rpos int
	total      int64

	state  inflateState
	final  bool
	stored int
	// copyLen and copyDist are a match not yet fully copied.
	copyLen, copyDist int
	lit, dist         huffTable
	err               error
}

// NewInflater decodes the raw deflate stream of src with a window of
// 1 << windowBits bytes (windowBits 8 to 15, 8 taken as 9 as zlib does).
func NewInflater(src io.ByteReader, windowBits int) (*Inflater, error) {
	if windowBits < 8 || windowBits > 15 {
		return nil, errors.New("window bits must be 8 to 15")
	}
	f := &Inflater{}
	f.Reset(src, windowBits)
	return f, nil
}

// Reset starts a new stream from src with the same ring.
func (f *Inflater) Reset(src io.ByteReader, windowBits int) {
	*f = Inflater{src: src, window: 1 << max(windowBits, 9)}
}

// Read implements io.Reader: it returns decoded bytes, io.EOF after the
// final block, or the stream's error.
func (f *Inflater) Read(p []byte) (int, error) {
	for {
		if f.rpos < f.wpos {
			n := copy(p, f.hist[f.rpos:f.wpos])
			f.rpos += n
			return n, nil
		}
		if f.err != nil {
			return 0, f.err
		}
		if f.wpos == historySize {
			f.wpos, f.rpos = 0, 0
		}
		f.err = f.step()
		if f.err == nil && f.state == stateDone && f.rpos == f.wpos {
			f.err = io.EOF
		}
	}
}

// ByteSource returns what follows the stream once Read has returned
// io.EOF: the whole bytes left in the bit buffer, then the source. The
// gzip trailer is read from it.
func (f *Inflater) ByteSource() io.ByteReader {
	f.bits >>= f.nbits % 8
	f.nbits -= f.nbits % 8
	return (*afterStream)(f)
}

// afterStream reads the bytes that follow a finished stream.
type afterStream Inflater

// ReadByte implements io.ByteReader.
func (a *afterStream) ReadByte() (byte, error) {
	if a.nbits >= 8 {
		b := byte(a.bits)
		a.bits >>= 8
		a.nbits -= 8
		return b, nil
	}
	return a.src.ReadByte()
}

// step decodes until the ring's free space is used, a block ends or the
// stream ends.
func (f *Inflater) step() error {
	switch f.state {
	case stateBlockHeader:
		return f.blockHeader()
	case stateStored:
		return f.copyStored()
	case stateHuffman:
		return f.decodeHuffman()
	}
	return nil
}

// need makes sure n bits (n <= 56) are buffered.
func (f *Inflater) need(n uint) error {
	for f.nbits < n {
		b, err := f.src.ReadByte()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		f.bits |= uint64(b) << f.nbits
		f.nbits += 8
	}
	return nil
}

// take returns the next n bits, n <= 32.
func (f *Inflater) take(n uint) (int, error) {
	if err := f.need(n); err != nil {
		return 0, err
	}
	v := int(f.bits & (1<<n - 1))
	f.bits >>= n
	f.nbits -= n
	return v, nil
}

// blockHeader reads a block's header (and a dynamic block's code tables).
func (f *Inflater) blockHeader() error {
	if f.final {
		f.state = stateDone
		return nil
	}
	h, err := f.take(3)
	if err != nil {
		return err
	}
	f.final = h&1 == 1
	switch h >> 1 {
	case 0:
		f.bits >>= f.nbits % 8
		f.nbits -= f.nbits % 8
		v, err := f.take(32)
		if err != nil {
			return err
		}
		if v&0xffff != ^v>>16&0xffff {
			return ErrStoredLength
		}
		f.stored = v & 0xffff
		f.state = stateStored
	case 1:
		f.fixedTables()
		f.state = stateHuffman
	case 2:
		if err := f.dynamicTables(); err != nil {
			return err
		}
		f.state = stateHuffman
	default:
		return ErrBlockType
	}
	return nil
}

// copyStored copies a stored block's bytes into the ring.
func (f *Inflater) copyStored() error {
	for f.stored > 0 && f.wpos < historySize {
		b, err := (*afterStream)(f).ReadByte()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		f.put(b)
		f.stored--
	}
	if f.stored == 0 {
		f.state = stateBlockHeader
	}
	return nil
}

// put appends one decoded byte to the ring.
func (f *Inflater) put(b byte) {
	f.hist[f.wpos] = b
	f.wpos++
	f.total++
}

// Length and distance bases and extra bits (RFC 1951 3.2.5).
var (
	inflateLenBase   = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	inflateLenExtra  = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	inflateDistBase  = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	inflateDistExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// fastBits is what one length and distance pair takes at most: a 15-bit
// literal/length code, 5 extra bits, a 15-bit distance code and 13 extra
// bits. With that many buffered, a symbol is decoded without checks.
const fastBits = 48

// decodeHuffman decodes a compressed block's symbols into the ring until
// it is full or the block ends.
func (f *Inflater) decodeHuffman() error {
	for f.wpos < historySize {
		if f.copyLen > 0 {
			f.copyMatch()
			continue
		}
		if f.nbits < fastBits {
			f.fill()
		}
		var sym, length int
		if f.nbits >= fastBits {
			e := f.lit.entries[f.bits&f.lit.mask]
			l := uint(e & 15)
			if l == 0 {
				return ErrCode
			}
			f.bits >>= l
			f.nbits -= l
			sym = int(e >> 4)
			if sym < 256 {
				f.hist[f.wpos] = byte(sym)
				f.wpos++
				f.total++
				continue
			}
			if sym > 256 && sym <= 285 && f.dist.maxLen > 0 {
				// The whole pair is buffered.
				i := sym - 257
				n := uint(inflateLenExtra[i])
				length = int(inflateLenBase[i]) + int(f.bits&(1<<n-1))
				f.bits >>= n
				f.nbits -= n
				e = f.dist.entries[f.bits&f.dist.mask]
				l = uint(e & 15)
				dsym := int(e >> 4)
				if l == 0 || dsym >= 30 {
					return ErrCode
				}
				f.bits >>= l
				f.nbits -= l
				n = uint(inflateDistExtra[dsym])
				dist := int(inflateDistBase[dsym]) + int(f.bits&(1<<n-1))
				f.bits >>= n
				f.nbits -= n
				if dist > f.window || int64(dist) > f.total {
					return ErrDistanceTooFar
				}
				f.copyLen, f.copyDist = length, dist
				continue
			}
		} else {
			var err error
			if sym, err = f.lit.decode(f); err != nil {
				return err
			}
			if sym < 256 {
				f.put(byte(sym))
				continue
			}
		}
		switch {
		case sym == 256:
			f.state = stateBlockHeader
			return nil
		case sym > 285:
			return ErrCode
		}
		i := sym - 257
		extra, err := f.take(uint(inflateLenExtra[i]))
		if err != nil {
			return err
		}
		length = int(inflateLenBase[i]) + extra
		dsym, err := f.dist.decode(f)
		if err != nil {
			return err
		}
		if dsym >= 30 {
			return ErrCode
		}
		extra, err = f.take(uint(inflateDistExtra[dsym]))
		if err != nil {
			return err
		}
		dist := int(inflateDistBase[dsym]) + extra
		if dist > f.window || int64(dist) > f.total {
			return ErrDistanceTooFar
		}
		f.copyLen, f.copyDist = length, dist
	}
	return nil
}

// fill buffers whole bytes while they fit, stopping quietly at the end
// of the input (need reports it when bits are missing). It never holds
// more than 7 bytes past the last code: all within the gzip trailer.
func (f *Inflater) fill() {
	for f.nbits <= 56 {
		b, err := f.src.ReadByte()
		if err != nil {
			return
		}
		f.bits |= uint64(b) << f.nbits
		f.nbits += 8
	}
}

// copyMatch copies as much of the pending match as the ring's free space
// takes.
func (f *Inflater) copyMatch() {
	from := f.wpos - f.copyDist
	if from < 0 {
		from += historySize
	}
	n := min(f.copyLen, historySize-f.wpos)
	if from+n <= historySize && (from+n <= f.wpos || from > f.wpos) {
		// Source and destination apart and the source unwrapped: one
		// copy.
		copy(f.hist[f.wpos:f.wpos+n], f.hist[from:from+n])
		f.wpos += n
		f.total += int64(n)
		f.copyLen -= n
		return
	}
	for range n {
		f.hist[f.wpos] = f.hist[from]
		f.wpos++
		if from++; from == historySize {
			from = 0
		}
	}
	f.total += int64(n)
	f.copyLen -= n
}

// fixedLitLenBits is the length of literal/length symbol sym's code in
// a fixed-code block (RFC 1951 3.2.6).
func fixedLitLenBits(sym int) uint8 {
	switch {
	case sym < 144:
		return 8
	case sym < 256:
		return 9
	case sym < 280:
		return 7
	}
	return 8
}

// fixedTables sets the fixed codes of a type 1 block.
func (f *Inflater) fixedTables() {
	var lens [288 + 32]uint8
	for i := range 288 {
		lens[i] = fixedLitLenBits(i)
	}
	for i := range 32 {
		lens[288+i] = 5
	}
	// The fixed code sets are complete: building them cannot fail.
	_ = f.lit.build(lens[:288])
	_ = f.dist.build(lens[288:])
}

// codeLengthOrder is the order of the code length code's lengths.
var codeLengthOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// dynamicTables reads a type 2 block's code tables.
func (f *Inflater) dynamicTables() error {
	h, err := f.take(14)
	if err != nil {
		return err
	}
	nlit, ndist, nclen := h&31+257, h>>5&31+1, h>>10+4
	if nlit > 286 || ndist > 30 {
		return ErrCodeLengths
	}
	var clens [19]uint8
	for i := range nclen {
		v, err := f.take(3)
		if err != nil {
			return err
		}
		clens[codeLengthOrder[i]] = uint8(v)
	}
	var clen huffTable
	if err := clen.build(clens[:]); err != nil {
		return ErrCodeLengths
	}
	var lens [286 + 30]uint8
	for i := 0; i < nlit+ndist; {
		sym, err := clen.decode(f)
		if err != nil {
			return err
		}
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var val uint8
		switch sym {
		case 16:
			if i == 0 {
				return ErrCodeLengths
			}
			val = lens[i-1]
			v, err := f.take(2)
			if err != nil {
				return err
			}
			rep = 3 + v
		case 17:
			v, err := f.take(3)
			if err != nil {
				return err
			}
			rep = 3 + v
		default:
			v, err := f.take(7)
			if err != nil {
				return err
			}
			rep = 11 + v
		}
		if i+rep > nlit+ndist {
			return ErrCodeLengths
		}
		for range rep {
			lens[i] = val
			i++
		}
	}
	if lens[256] == 0 {
		// A block without an end-of-block code can never end.
		return ErrCodeLengths
	}
	if err := f.lit.build(lens[:nlit]); err != nil {
		return err
	}
	return f.dist.build(lens[nlit : nlit+ndist])
}

// huffTable decodes one canonical Huffman code by table lookup: entry
// i, for the code's maxLen next bits read as i, holds the symbol << 4 |
// the code's length (0: no code starts with those bits).
type huffTable struct {
	entries []uint16
	maxLen  uint
	// mask is 1<<maxLen - 1.
	mask uint64
}

// build makes the table of the code with the given lengths per symbol.
// An over-subscribed set is refused; an incomplete one is kept, its
// unused bit patterns failing when met (as a single distance code of one
// bit, which RFC 1951 allows, needs).
func (t *huffTable) build(lens []uint8) error {
	var count [16]int
	maxLen := 0
	for _, l := range lens {
		count[l]++
		maxLen = max(maxLen, int(l))
	}
	count[0] = 0
	left := 1
	for l := 1; l < 16; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return ErrCodeLengths
		}
	}
	var next [16]int
	code := 0
	for l := 1; l < 16; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	size := 1 << maxLen
	if cap(t.entries) < size {
		t.entries = make([]uint16, size)
	}
	t.entries = t.entries[:size]
	clear(t.entries)
	t.maxLen = uint(maxLen)
	t.mask = uint64(size - 1)
	for sym, l := range lens {
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		rev := 0
		for range l {
			rev = rev<<1 | c&1
			c >>= 1
		}
		for i := rev; i < size; i += 1 << l {
			t.entries[i] = uint16(sym)<<4 | uint16(l)
		}
	}
	return nil
}

// decode reads one symbol of the code from f.
func (t *huffTable) decode(f *Inflater) (int, error) {
	if t.maxLen == 0 {
		return 0, ErrCode
	}
	// Near the end of the input the last code may be shorter than the
	// longest: take what there is and check the code's own length.
	err := f.need(t.maxLen)
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, err
	}
	e := t.entries[f.bits&(1<<t.maxLen-1)]
	l := uint(e & 15)
	if l == 0 {
		return 0, ErrCode
	}
	if l > f.nbits {
		return 0, io.ErrUnexpectedEOF
	}
	f.bits >>= l
	f.nbits -= l
	return int(e >> 4), nil
}
