package deflate

import (
	"errors"
	"fmt"
)

// Strategy is zlib's compression strategy; the values are zlib's (and
// Envoy's CompressionStrategy enum's).
type Strategy int

// zlib's strategies.
const (
	// DefaultStrategy finds matches on hash chains, lazily from level 4.
	DefaultStrategy Strategy = 0
	// Filtered drops matches of 5 bytes or less (at levels 4 to 9),
	// for data of small, somewhat random values.
	Filtered Strategy = 1
	// HuffmanOnly codes literals only: no matches.
	HuffmanOnly Strategy = 2
	// RLE finds runs only: matches at distance 1.
	RLE Strategy = 3
	// Fixed uses the fixed Huffman codes only, never dynamic ones.
	Fixed Strategy = 4
)

// DefaultLevel is zlib's Z_DEFAULT_COMPRESSION, which means level 6.
const DefaultLevel = -1

// Options are deflateInit2's parameters.
type Options struct {
	// Level is 0 (stored) to 9 (best), or DefaultLevel.
	Level int
	// WindowBits is the base-two logarithm of the window, 9 to 15 (8 is
	// taken as 9, as zlib does): no match reaches further back than
	// 2^WindowBits - 262 bytes.
	WindowBits int
	// MemLevel, 1 to 9, sizes the hash table (2^(MemLevel+7) heads) and
	// the symbol buffer (2^(MemLevel+6)-1 symbols per block), as zlib.
	MemLevel int
	// Strategy is zlib's strategy.
	Strategy Strategy
}

// Validate reports parameters that zlib's deflateInit2 refuses.
func (o Options) Validate() error {
	var errs []error
	if o.Level != DefaultLevel && (o.Level < 0 || o.Level > 9) {
		errs = append(errs, fmt.Errorf("level %d is not -1 or 0 to 9", o.Level))
	}
	if o.WindowBits < 8 || o.WindowBits > 15 {
		errs = append(errs, fmt.Errorf("window bits %d is not 8 to 15", o.WindowBits))
	}
	if o.MemLevel < 1 || o.MemLevel > 9 {
		errs = append(errs, fmt.Errorf("memory level %d is not 1 to 9", o.MemLevel))
	}
	if o.Strategy < DefaultStrategy || o.Strategy > Fixed {
		errs = append(errs, fmt.Errorf("strategy %d is not 0 to 4", o.Strategy))
	}
	return errors.Join(errs...)
}

// compressFunc selects the match finder of a level.
type compressFunc uint8

const (
	funcStored compressFunc = iota
	funcFast
	funcSlow
)

// levelConfig is a row of zlib's configuration table.
type levelConfig struct {
	// goodLength: above this previous match length, search a quarter
	// of the chain. maxLazy: do not look for a better match past this
	// length (deflate_fast: insert matches up to this length in the
	// hash). niceLength: stop searching at this length. maxChain: the
	// longest hash chain followed.
	goodLength, maxLazy, niceLength, maxChain int
	fn                                        compressFunc
}

// configTable is zlib's configuration_table, by level.
var configTable = [10]levelConfig{
	{0, 0, 0, 0, funcStored},
	{4, 4, 8, 4, funcFast},
	{4, 5, 16, 8, funcFast},
	{4, 6, 32, 32, funcFast},
	{4, 4, 16, 16, funcSlow},
	{8, 16, 32, 32, funcSlow},
	{8, 16, 128, 128, funcSlow},
	{8, 32, 128, 256, funcSlow},
	{32, 128, 258, 1024, funcSlow},
	{32, 258, 258, 4096, funcSlow},
}
