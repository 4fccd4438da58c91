package deflate

// The compress functions, one per kind of match finding, after zlib's
// deflate_stored, deflate_fast, deflate_slow, deflate_rle and
// deflate_huff. Each consumes the input, ending blocks when the symbol
// buffer fills, and returns needMore without a flush.

// deflateStored copies the input into stored blocks (level 0).
func (e *Encoder) deflateStored(flush int) blockState {
	for {
		if e.lookahead <= 1 {
			e.fillWindow()
			if e.lookahead == 0 {
				if flush == noFlush {
					return needMore
				}
				break
			}
		}
		e.strStart += e.lookahead
		e.lookahead = 0
		if maxStart := e.blockStart + e.maxBlockSize; e.strStart >= maxStart {
			e.lookahead = e.strStart - maxStart
			e.strStart = maxStart
			e.flushBlock(false)
		}
		// End the block before its input slides out of the window.
		if e.strStart-e.blockStart >= e.maxDist() {
			e.flushBlock(false)
		}
	}
	e.insert = 0
	if flush == finish {
		e.flushBlock(true)
		return finishDone
	}
	if e.strStart > e.blockStart {
		e.flushBlock(false)
	}
	return blockDone
}

// nextString keeps enough lookahead for a match and the insertion
// after it, then inserts the string at strStart and returns its hash
// chain's previous head. The state is needMore without a flush while
// the lookahead is short, blockDone once the input is used up, and
// goOn otherwise.
func (e *Encoder) nextString(flush int) (int, blockState) {
	if e.lookahead < minLookahead {
		e.fillWindow()
		if e.lookahead < minLookahead && flush == noFlush {
			return 0, needMore
		}
		if e.lookahead == 0 {
			return 0, blockDone
		}
	}
	if e.lookahead < minMatch {
		return 0, goOn
	}
	return e.insertString(e.strStart), goOn
}

// deflateHashed runs the hash-chain match finders, deflate_fast (lazy
// false, levels 1-3) and deflate_slow (lazy, levels 4-9), one string
// at a time.
func (e *Encoder) deflateHashed(flush int, lazy bool) blockState {
	for {
		hashHead, st := e.nextString(flush)
		if st == needMore {
			return needMore
		}
		if st == blockDone {
			break
		}
		if lazy {
			e.slowStep(hashHead)
		} else {
			e.fastStep(hashHead)
		}
	}
	// The lazy finder's last position, still waiting for a decision.
	if e.matchAvailable {
		e.tallyLit(e.window[e.strStart-1])
		e.matchAvailable = false
	}
	return e.endInput(flush, min(e.strStart, minMatch-1))
}

// fastStep takes the longest match at strStart, with no lazy
// evaluation, and inserts only short matches' strings.
func (e *Encoder) fastStep(hashHead int) {
	if hashHead != 0 && e.strStart-hashHead <= e.maxDist() {
		e.matchLength = e.longestMatch(hashHead)
	}
	var full bool
	if e.matchLength >= minMatch {
		full = e.tallyDist(e.strStart-e.matchStart, e.matchLength-minMatch)
		e.lookahead -= e.matchLength
		if e.matchLength <= e.maxLazy && e.lookahead >= minMatch {
			// The string at strStart is in the table already.
			for e.matchLength--; e.matchLength != 0; e.matchLength-- {
				e.strStart++
				e.insertString(e.strStart)
			}
			e.strStart++
		} else {
			e.strStart += e.matchLength
			e.matchLength = 0
			e.insH = int(e.window[e.strStart])
			e.insH = e.updateHash(e.insH, e.window[e.strStart+1])
		}
	} else {
		full = e.literal()
	}
	if full {
		e.flushBlock(false)
	}
}

// slowStep adopts the previous position's match only if strStart has
// no longer one (lazy evaluation).
func (e *Encoder) slowStep(hashHead int) {
	e.prevLength, e.prevMatch = e.matchLength, e.matchStart
	e.matchLength = minMatch - 1
	if hashHead != 0 && e.prevLength < e.maxLazy && e.strStart-hashHead <= e.maxDist() {
		e.matchLength = e.longestMatch(hashHead)
		if e.matchLength <= 5 && (e.strategy == Filtered ||
			(e.matchLength == minMatch && e.strStart-e.matchStart > tooFar)) {
			e.matchLength = minMatch - 1
		}
	}
	switch {
	case e.prevLength >= minMatch && e.matchLength <= e.prevLength:
		// The previous match is at least as good: take it.
		maxInsert := e.strStart + e.lookahead - minMatch
		full := e.tallyDist(e.strStart-1-e.prevMatch, e.prevLength-minMatch)
		e.lookahead -= e.prevLength - 1
		for e.prevLength -= 2; e.prevLength != 0; e.prevLength-- {
			e.strStart++
			if e.strStart <= maxInsert {
				e.insertString(e.strStart)
			}
		}
		e.matchAvailable = false
		e.matchLength = minMatch - 1
		e.strStart++
		if full {
			e.flushBlock(false)
		}
	case e.matchAvailable:
		// The previous position gets a literal: this match is
		// longer, or there was none.
		if e.tallyLit(e.window[e.strStart-1]) {
			e.flushBlock(false)
		}
		e.strStart++
		e.lookahead--
	default:
		e.matchAvailable = true
		e.strStart++
		e.lookahead--
	}
}

// deflateRLE finds runs of the previous byte: matches at distance 1.
func (e *Encoder) deflateRLE(flush int) blockState {
	for {
		if e.lookahead <= maxMatch {
			e.fillWindow()
			if e.lookahead <= maxMatch && flush == noFlush {
				return needMore
			}
			if e.lookahead == 0 {
				break
			}
		}
		e.matchLength = 0
		if e.lookahead >= minMatch && e.strStart > 0 {
			win := e.window[e.strStart-1 : e.strStart+maxMatch]
			prev := win[0]
			n := 0
			for n < maxMatch && win[n+1] == prev {
				n++
			}
			if n >= minMatch {
				e.matchLength = min(n, e.lookahead)
			}
		}
		var full bool
		if e.matchLength >= minMatch {
			full = e.tallyDist(1, e.matchLength-minMatch)
			e.lookahead -= e.matchLength
			e.strStart += e.matchLength
			e.matchLength = 0
		} else {
			full = e.literal()
		}
		if full {
			e.flushBlock(false)
		}
	}
	return e.endInput(flush, 0)
}

// deflateHuff codes every byte as a literal.
func (e *Encoder) deflateHuff(flush int) blockState {
	for {
		if e.lookahead == 0 {
			e.fillWindow()
			if e.lookahead == 0 {
				if flush == noFlush {
					return needMore
				}
				break
			}
		}
		e.matchLength = 0
		full := e.literal()
		if full {
			e.flushBlock(false)
		}
	}
	return e.endInput(flush, 0)
}

// literal emits the byte at strStart as a literal and moves past it; it
// reports a full symbol buffer.
func (e *Encoder) literal() bool {
	full := e.tallyLit(e.window[e.strStart])
	e.lookahead--
	e.strStart++
	return full
}
