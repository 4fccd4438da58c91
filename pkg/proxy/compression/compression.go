// Package compression is the interface between the compressor and
// decompressor HTTP filters and the compression libraries, Envoy's
// envoy.compression.compressor and envoy.compression.decompressor
// extension categories: a library package (gzip, brotli, zstd) registers
// a CompressorFactory and a DecompressorFactory, which compile its
// configuration into a value that makes one (de)compressor per body.
package compression

import (
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Envoy's extension categories of the compression libraries.
const (
	CompressorCategory   = "envoy.compression.compressor"
	DecompressorCategory = "envoy.compression.decompressor"
)

// CompressorFactory compiles a compressor library's configuration.
type CompressorFactory interface {
	// CompileCompressor checks and compiles the typed_config of a
	// compressor_library. Errors name the field path below it.
	CompileCompressor(config proto.Message) (CompressorConfig, error)
}

// CompressorConfig is a compiled compressor library.
type CompressorConfig interface {
	// ContentEncoding is the coding it produces: "gzip", "br", "zstd".
	ContentEncoding() string
	// StatsPrefix is its part of the filter's stat names: "gzip.".
	StatsPrefix() string
	// NewCompressor returns the compressor of one body.
	NewCompressor() Compressor
}

// Compressor compresses one body, piece by piece. Its results are valid
// until its next call.
type Compressor interface {
	// Compress compresses p and flushes, as Envoy's compressors do for
	// each piece (zlib's Z_SYNC_FLUSH): what the client receives so far
	// decodes to all of the body so far.
	Compress(p []byte) ([]byte, error)
	// Finish ends the compressed stream and returns its last bytes.
	Finish() ([]byte, error)
	// Release gives the compressor's resources back; it is not used
	// after.
	Release()
}

// DecompressorFactory compiles a decompressor library's configuration.
type DecompressorFactory interface {
	// CompileDecompressor checks and compiles the typed_config of a
	// decompressor_library; its stats are created under prefix (the
	// filter's, ending in "."). Errors name the field path below it.
	CompileDecompressor(config proto.Message, st *stats.Store, prefix string) (DecompressorConfig, error)
}

// DecompressorConfig is a compiled decompressor library.
type DecompressorConfig interface {
	// ContentEncoding is the coding it decodes.
	ContentEncoding() string
	// StatsPrefix is its part of the filter's stat names: "gzip.".
	StatsPrefix() string
	// NewDecompressor returns the decompressor of one body.
	NewDecompressor() Decompressor
}

// Decompressor decompresses one body, piece by piece. Its results are
// valid until its next call. A broken or over-inflating stream is not an
// error to the stream, as in Envoy: the decompressor counts it, keeps
// what it decoded before and drops the rest.
type Decompressor interface {
	// Decompress decodes p and returns what it could decode so far.
	Decompress(p []byte) []byte
	// Finish returns the rest, once the body has ended.
	Finish() []byte
	// Release gives the decompressor's resources back; it is not used
	// after.
	Release()
}
