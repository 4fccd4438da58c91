// Package zstd is the zstd compression library
// (envoy.compression.zstd.compressor and
// envoy.compression.zstd.decompressor), on klauspost/compress/zstd.
package zstd

import (
	"errors"
	"fmt"
	"io"
	"sync"

	zcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	zdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/decompressor/v3"
	kzstd "github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// The library's names in the proxy. spelling.
const (
	CompressorName   = "proxy.compression.zstd.compressor"
	DecompressorName = "proxy.compression.zstd.decompressor"
)

// Envoy's defaults.
const (
	defaultLevel     = 3
	defaultChunkSize = 4096
	maxInflateRatio  = 100
	// maxWindow bounds the decoder's memory per body.
	maxWindow = 8 << 20
)

// Compressor is the compressor library's factory.
type Compressor struct{}

var _ compression.CompressorFactory = Compressor{}

// CompileCompressor implements compression.CompressorFactory. A strategy
// other than DEFAULT is refused: the Go encoder has no such setting. A
// dictionary primes every frame (see dictionary.go).
func (Compressor) CompileCompressor(config proto.Message) (compression.CompressorConfig, error) {
	z, ok := config.(*zcv3.Zstd)
	if !ok {
		return nil, errors.New("not a Zstd compressor configuration")
	}
	var errs []error
	if s := z.GetStrategy(); s != zcv3.Zstd_DEFAULT {
		errs = append(errs, fmt.Errorf("strategy: %s has no equivalent in Outrigger's zstd encoder (supported: DEFAULT)", s))
	}
	var dict []byte
	if ds := z.GetDictionary(); ds != nil {
		var err error
		if dict, _, err = readDictionary(ds); err != nil {
			errs = append(errs, fmt.Errorf("dictionary: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	level := defaultLevel
	if l := z.GetCompressionLevel(); l != nil {
		level = int(l.GetValue())
	}
	c := &compressorConfig{chunk: defaultChunkSize}
	if cs := z.GetChunkSize(); cs != nil {
		c.chunk = int(cs.GetValue())
	}
	c.opts = []kzstd.EOption{
		kzstd.WithEncoderLevel(kzstd.EncoderLevelFromZstd(level)),
		kzstd.WithEncoderCRC(z.GetEnableChecksum()),
		kzstd.WithEncoderConcurrency(1),
		kzstd.WithLowerEncoderMem(true),
	}
	if dict != nil {
		c.opts = append(c.opts, kzstd.WithEncoderDict(dict))
	}
	c.pool.New = func() any {
		wc := &compression.WriterCompressor{OnRelease: c.release}
		wc.Buf.Grow(c.chunk)
		w, err := kzstd.NewWriter(&wc.Buf, c.opts...)
		if err != nil {
			return nil
		}
		wc.W = w
		return wc
	}
	if _, err := kzstd.NewWriter(nil, c.opts...); err != nil {
		return nil, fmt.Errorf("compression_level: %w", err)
	}
	return c, nil
}

// compressorConfig is a compiled zstd compressor.
type compressorConfig struct {
	opts  []kzstd.EOption
	chunk int
	pool  sync.Pool
}

// ContentEncoding implements compression.CompressorConfig.
func (*compressorConfig) ContentEncoding() string { return "zstd" }

// StatsPrefix implements compression.CompressorConfig.
func (*compressorConfig) StatsPrefix() string { return "zstd." }

// NewCompressor implements compression.CompressorConfig.
func (c *compressorConfig) NewCompressor() compression.Compressor {
	wc := c.pool.Get().(*compression.WriterCompressor)
	wc.Buf.Reset()
	wc.W.(*kzstd.Encoder).Reset(&wc.Buf)
	return wc
}

// release takes a compressor back into the pool.
func (c *compressorConfig) release(wc *compression.WriterCompressor) { c.pool.Put(wc) }

// Decompressor is the decompressor library's factory.
type Decompressor struct{}

var _ compression.DecompressorFactory = Decompressor{}

// CompileDecompressor implements compression.DecompressorFactory. A
// frame whose dictionary id is not 0 is decoded with the dictionary of
// that id, and fails (zstd_dictionary_error) without one.
func (Decompressor) CompileDecompressor(config proto.Message, st *stats.Store, prefix string) (compression.DecompressorConfig, error) {
	z, ok := config.(*zdv3.Zstd)
	if !ok {
		return nil, errors.New("not a Zstd decompressor configuration")
	}
	c := &decompressorConfig{chunk: defaultChunkSize}
	for i, ds := range z.GetDictionaries() {
		b, _, err := readDictionary(ds)
		if err != nil {
			return nil, fmt.Errorf("dictionaries[%d]: %w", i, err)
		}
		c.dicts = append(c.dicts, b)
	}
	if len(c.dicts) > 0 {
		// Checked once here, so that a reader per body cannot fail.
		if _, err := kzstd.NewReader(nil, kzstd.WithDecoderDicts(c.dicts...)); err != nil {
			return nil, fmt.Errorf("dictionaries: %w", err)
		}
	}
	if cs := z.GetChunkSize(); cs != nil {
		c.chunk = int(cs.GetValue())
	}
	if st != nil {
		sc := st.Scope(prefix + "zstd.decompressor_library.")
		c.generic = sc.Counter("zstd_generic_error")
		c.checksum = sc.Counter("zstd_checksum_wrong_error")
		c.memory = sc.Counter("zstd_memory_error")
		c.dictionary = sc.Counter("zstd_dictionary_error")
	}
	return c, nil
}

// decompressorConfig is a compiled zstd decompressor.
type decompressorConfig struct {
	// chunk is chunk_size: the decoder's output buffer.
	chunk int
	// dicts are the dictionaries, in zstd's format.
	dicts [][]byte
	// Envoy's counters: checksum mismatches, windows past the memory
	// bound, frames whose dictionary is unknown, and every other error.
	generic, checksum, memory, dictionary *stats.Counter
}

// ContentEncoding implements compression.DecompressorConfig.
func (*decompressorConfig) ContentEncoding() string { return "zstd" }

// StatsPrefix implements compression.DecompressorConfig.
func (*decompressorConfig) StatsPrefix() string { return "zstd." }

// NewDecompressor implements compression.DecompressorConfig.
func (c *decompressorConfig) NewDecompressor() compression.Decompressor {
	count := func() {
		if c.generic != nil {
			c.generic.Inc()
		}
	}
	onError := func(err error) {
		switch {
		case c.generic == nil:
		case errors.Is(err, kzstd.ErrCRCMismatch):
			c.checksum.Inc()
		case errors.Is(err, kzstd.ErrWindowSizeExceeded), errors.Is(err, kzstd.ErrDecoderSizeExceeded):
			c.memory.Inc()
		case errors.Is(err, kzstd.ErrUnknownDictionary):
			c.dictionary.Inc()
		default:
			c.generic.Inc()
		}
	}
	return &compression.ReaderDecompressor{
		NewReader: func(r io.Reader) (io.Reader, error) {
			opts := []kzstd.DOption{kzstd.WithDecoderConcurrency(1), kzstd.WithDecoderMaxWindow(maxWindow), kzstd.WithDecoderLowmem(true)}
			if len(c.dicts) > 0 {
				opts = append(opts, kzstd.WithDecoderDicts(c.dicts...))
			}
			d, err := kzstd.NewReader(r, opts...)
			if err != nil {
				return nil, err
			}
			return d.IOReadCloser(), nil
		},
		ChunkSize: c.chunk,
		MaxRatio:  maxInflateRatio,
		OnError:   onError,
		OnRatio:   count,
	}
}
