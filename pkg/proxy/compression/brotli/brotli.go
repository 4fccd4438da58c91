// Package brotli is the brotli compression library
// (envoy.compression.brotli.compressor and
// envoy.compression.brotli.decompressor), on andybalholm/brotli.
package brotli

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	brcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	brdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/decompressor/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// The library's names in the proxy. spelling.
const (
	CompressorName   = "proxy.compression.brotli.compressor"
	DecompressorName = "proxy.compression.brotli.decompressor"
)

// Envoy's defaults.
const (
	defaultQuality    = 3
	defaultWindowBits = 18
	defaultBlockBits  = 24
	defaultChunkSize  = 4096
	// maxInflateRatio bounds a piece's output, as Envoy's compression
	// bomb protection does for brotli.
	maxInflateRatio = 100
)

// Compressor is the compressor library's factory.
type Compressor struct{}

var _ compression.CompressorFactory = Compressor{}

// CompileCompressor implements compression.CompressorFactory.
// encoder_mode other than DEFAULT, input_block_bits other than 24 and
// disable_literal_context_modeling are refused: the Go encoder has no
// such setting.
func (Compressor) CompileCompressor(config proto.Message) (compression.CompressorConfig, error) {
	b, ok := config.(*brcv3.Brotli)
	if !ok {
		return nil, errors.New("not a Brotli compressor configuration")
	}
	var errs []error
	if m := b.GetEncoderMode(); m != brcv3.Brotli_DEFAULT {
		errs = append(errs, fmt.Errorf("encoder_mode: %s has no equivalent in Outrigger's brotli encoder (supported: DEFAULT)", m))
	}
	if ib := b.GetInputBlockBits(); ib != nil && ib.GetValue() != defaultBlockBits {
		errs = append(errs, fmt.Errorf("input_block_bits: %d is not supported by Outrigger's brotli encoder (supported: 24)", ib.GetValue()))
	}
	if b.GetDisableLiteralContextModeling() {
		errs = append(errs, errors.New("disable_literal_context_modeling: not supported by Outrigger's brotli encoder"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c := &compressorConfig{opts: brotli.WriterOptions{Quality: defaultQuality, LGWin: defaultWindowBits}, chunk: defaultChunkSize}
	if q := b.GetQuality(); q != nil {
		c.opts.Quality = int(q.GetValue())
	}
	if w := b.GetWindowBits(); w != nil {
		c.opts.LGWin = int(w.GetValue())
	}
	if cs := b.GetChunkSize(); cs != nil {
		c.chunk = int(cs.GetValue())
	}
	c.pool.New = func() any {
		wc := &compression.WriterCompressor{OnRelease: c.release}
		wc.Buf.Grow(c.chunk)
		wc.W = brotli.NewWriterOptions(&wc.Buf, c.opts)
		return wc
	}
	return c, nil
}

// compressorConfig is a compiled brotli compressor.
type compressorConfig struct {
	opts  brotli.WriterOptions
	chunk int
	pool  sync.Pool
}

// ContentEncoding implements compression.CompressorConfig.
func (*compressorConfig) ContentEncoding() string { return "br" }

// StatsPrefix implements compression.CompressorConfig.
func (*compressorConfig) StatsPrefix() string { return "brotli." }

// NewCompressor implements compression.CompressorConfig.
func (c *compressorConfig) NewCompressor() compression.Compressor {
	wc := c.pool.Get().(*compression.WriterCompressor)
	wc.Buf.Reset()
	wc.W.(*brotli.Writer).Reset(&wc.Buf)
	return wc
}

// release takes a compressor back into the pool.
func (c *compressorConfig) release(wc *compression.WriterCompressor) { c.pool.Put(wc) }

// Decompressor is the decompressor library's factory.
type Decompressor struct{}

var _ compression.DecompressorFactory = Decompressor{}

// CompileDecompressor implements compression.DecompressorFactory.
// disable_ring_buffer_reallocation is refused: the Go decoder has no such
// setting.
func (Decompressor) CompileDecompressor(config proto.Message, st *stats.Store, prefix string) (compression.DecompressorConfig, error) {
	b, ok := config.(*brdv3.Brotli)
	if !ok {
		return nil, errors.New("not a Brotli decompressor configuration")
	}
	if b.GetDisableRingBufferReallocation() {
		return nil, errors.New("disable_ring_buffer_reallocation: not supported by Outrigger's brotli decoder")
	}
	c := &decompressorConfig{chunk: defaultChunkSize}
	if cs := b.GetChunkSize(); cs != nil {
		c.chunk = int(cs.GetValue())
	}
	if st != nil {
		sc := st.Scope(prefix + "brotli.decompressor_library.")
		c.errors = sc.Counter("brotli_error")
		c.overflow = sc.Counter("brotli_output_overflow")
		c.redundant = sc.Counter("brotli_redundant_input")
	}
	return c, nil
}

// decompressorConfig is a compiled brotli decompressor.
type decompressorConfig struct {
	// chunk is chunk_size: the decoder's output buffer.
	chunk int
	// Envoy's counters: every error, then the output past the inflate
	// bound and input after the stream's end.
	errors, overflow, redundant *stats.Counter
}

// ContentEncoding implements compression.DecompressorConfig.
func (*decompressorConfig) ContentEncoding() string { return "br" }

// StatsPrefix implements compression.DecompressorConfig.
func (*decompressorConfig) StatsPrefix() string { return "brotli." }

// NewDecompressor implements compression.DecompressorConfig.
func (c *decompressorConfig) NewDecompressor() compression.Decompressor {
	count := func(specific *stats.Counter) {
		if c.errors != nil {
			c.errors.Inc()
		}
		if specific != nil {
			specific.Inc()
		}
	}
	return &compression.ReaderDecompressor{
		NewReader: func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
		ChunkSize: c.chunk,
		MaxRatio:  maxInflateRatio,
		OnError: func(err error) {
			// The Go decoder says so when data follows the stream.
			if err.Error() == "brotli: excessive input" {
				count(c.redundant)
				return
			}
			count(nil)
		},
		OnRatio:    func() { count(c.overflow) },
		OnTrailing: func() { count(c.redundant) },
	}
}
