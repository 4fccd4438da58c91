// Package gzip is the gzip compression library
// (envoy.compression.gzip.compressor and
// envoy.compression.gzip.decompressor). The compressor is the deflate
// package's encoder, which has zlib's parameters (window, memory level,
// strategies) and produces zlib's output for them; the decompressor
// is klauspost/compress's inflate.
package gzip

import (
	"errors"
	"fmt"
	"io"
	"sync"

	gzipcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	gzipdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/decompressor/v3"
	kgzip "github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/compression/deflate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// The library's names in the proxy. spelling.
const (
	CompressorName   = "proxy.compression.gzip.compressor"
	DecompressorName = "proxy.compression.gzip.decompressor"
)

// Envoy's defaults.
const (
	defaultChunkSize       = 4096
	defaultMaxInflateRatio = 100
	// goWindowBits is the window of Go's inflate: 32 KiB, zlib's largest.
	goWindowBits = 15
	// Envoy's compressor defaults: a 4 KiB window and memory level 5
	// (zlib's own are 15 and 8).
	defaultWindowBits  = 12
	defaultMemoryLevel = 5
)

// Compressor is the compressor library's factory.
type Compressor struct{}

var _ compression.CompressorFactory = Compressor{}

// CompileCompressor implements compression.CompressorFactory. Every
// field has zlib's meaning; the proto's validation already bounds
// memory_level (1-9) and window_bits (9-15).
func (Compressor) CompileCompressor(config proto.Message) (compression.CompressorConfig, error) {
	g, ok := config.(*gzipcv3.Gzip)
	if !ok {
		return nil, errors.New("not a Gzip compressor configuration")
	}
	o := deflate.Options{
		Level:      int(g.GetCompressionLevel()),
		WindowBits: defaultWindowBits,
		MemLevel:   defaultMemoryLevel,
		Strategy:   deflate.Strategy(g.GetCompressionStrategy()),
	}
	if o.Level == int(gzipcv3.Gzip_DEFAULT_COMPRESSION) {
		o.Level = deflate.DefaultLevel
	}
	if wb := g.GetWindowBits(); wb != nil {
		o.WindowBits = int(wb.GetValue())
	}
	if ml := g.GetMemoryLevel(); ml != nil {
		o.MemLevel = int(ml.GetValue())
	}
	var errs []error
	if o.WindowBits < 9 || o.WindowBits > 15 {
		errs = append(errs, fmt.Errorf("window_bits: %d is not 9 to 15", o.WindowBits))
	}
	if o.MemLevel < 1 || o.MemLevel > 9 {
		errs = append(errs, fmt.Errorf("memory_level: %d is not 1 to 9", o.MemLevel))
	}
	if o.Strategy < deflate.DefaultStrategy || o.Strategy > deflate.Fixed {
		errs = append(errs, fmt.Errorf("compression_strategy: %d is not a strategy", o.Strategy))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c := &compressorConfig{opts: o, chunk: defaultChunkSize}
	if cs := g.GetChunkSize(); cs != nil {
		c.chunk = int(cs.GetValue())
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("compression_level: %w", err)
	}
	c.pool.New = func() any {
		wc := &compression.WriterCompressor{OnRelease: c.release}
		wc.Buf.Grow(c.chunk)
		// The options were checked above.
		w, _ := deflate.NewGzipWriter(&wc.Buf, c.opts)
		wc.W = w
		return wc
	}
	return c, nil
}

// compressorConfig is a compiled gzip compressor.
type compressorConfig struct {
	opts deflate.Options
	// chunk is chunk_size: the output buffer's size.
	chunk int
	pool  sync.Pool
}

// ContentEncoding implements compression.CompressorConfig.
func (*compressorConfig) ContentEncoding() string { return "gzip" }

// StatsPrefix implements compression.CompressorConfig.
func (*compressorConfig) StatsPrefix() string { return "gzip." }

// NewCompressor implements compression.CompressorConfig.
func (c *compressorConfig) NewCompressor() compression.Compressor {
	wc := c.pool.Get().(*compression.WriterCompressor)
	wc.Buf.Reset()
	wc.W.(*deflate.GzipWriter).Reset(&wc.Buf)
	return wc
}

// release takes a compressor back into the pool.
func (c *compressorConfig) release(wc *compression.WriterCompressor) { c.pool.Put(wc) }

// Decompressor is the decompressor library's factory.
type Decompressor struct{}

var _ compression.DecompressorFactory = Decompressor{}

// CompileDecompressor implements compression.DecompressorFactory.
func (Decompressor) CompileDecompressor(config proto.Message, st *stats.Store, prefix string) (compression.DecompressorConfig, error) {
	g, ok := config.(*gzipdv3.Gzip)
	if !ok {
		return nil, errors.New("not a Gzip decompressor configuration")
	}
	c := &decompressorConfig{ratio: defaultMaxInflateRatio, chunk: defaultChunkSize, windowBits: goWindowBits}
	if wb := g.GetWindowBits(); wb != nil {
		// The proto's constraint (9 to 15) has been checked.
		c.windowBits = int(wb.GetValue())
	}
	if cs := g.GetChunkSize(); cs != nil {
		c.chunk = int(cs.GetValue())
	}
	if r := g.GetMaxInflateRatio(); r != nil {
		c.ratio = uint64(r.GetValue())
	}
	if st != nil {
		sc := st.Scope(prefix + "gzip.decompressor_library.")
		c.dataError = sc.Counter("zlib_data_error")
		c.bufError = sc.Counter("zlib_buf_error")
		// Envoy's other zlib error counters, which Go's inflate never
		// has a cause for.
		sc.Counter("zlib_errno")
		sc.Counter("zlib_stream_error")
		sc.Counter("zlib_mem_error")
		sc.Counter("zlib_version_error")
	}
	return c, nil
}

// decompressorConfig is a compiled gzip decompressor.
type decompressorConfig struct {
	// chunk is chunk_size: the decoder's output buffer.
	chunk               int
	ratio               uint64
	dataError, bufError *stats.Counter
	// windowBits is window_bits: at 15, Go's inflate (faster); below,
	// Outrigger's, which refuses a distance past the window as zlib does.
	windowBits int
}

// ContentEncoding implements compression.DecompressorConfig.
func (*decompressorConfig) ContentEncoding() string { return "gzip" }

// StatsPrefix implements compression.DecompressorConfig.
func (*decompressorConfig) StatsPrefix() string { return "gzip." }

// NewDecompressor implements compression.DecompressorConfig.
func (c *decompressorConfig) NewDecompressor() compression.Decompressor {
	return &compression.ReaderDecompressor{
		NewReader: c.newReader,
		ChunkSize: c.chunk,
		MaxRatio:  c.ratio,
		OnError: func(err error) {
			// A stream cut short is zlib's Z_BUF_ERROR; anything else
			// is bad data.
			if errors.Is(err, io.ErrUnexpectedEOF) {
				inc(c.bufError)
				return
			}
			inc(c.dataError)
		},
		OnRatio: func() { inc(c.dataError) },
	}
}

// newReader opens the decoder of a body.
func (c *decompressorConfig) newReader(r io.Reader) (io.Reader, error) {
	if c.windowBits == goWindowBits {
		return kgzip.NewReader(r)
	}
	return deflate.NewGzipReader(r, c.windowBits)
}

// inc increments c when there is one.
func inc(c *stats.Counter) {
	if c != nil {
		c.Inc()
	}
}
