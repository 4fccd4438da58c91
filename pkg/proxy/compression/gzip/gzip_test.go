package gzip

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	gzipcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	gzipdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/decompressor/v3"
	kgzip "github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/compression/deflate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// gzipped compresses b in one go.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := kgzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pieces decompresses b given in pieces of n bytes.
func pieces(d compression.Decompressor, b []byte, n int) []byte {
	var out []byte
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, d.Decompress(b[:k])...)
		b = b[k:]
	}
	return append(out, d.Finish()...)
}

func decompressor(t *testing.T, st *stats.Store, g *gzipdv3.Gzip) compression.DecompressorConfig {
	t.Helper()
	c, err := Decompressor{}.CompileDecompressor(g, st, "p.")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTrip(t *testing.T) {
	cc, err := Compressor{}.CompileCompressor(&gzipcv3.Gzip{CompressionLevel: gzipcv3.Gzip_BEST_SPEED})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("round trip ", 5000))
	c := cc.NewCompressor()
	var z []byte
	for i := 0; i < len(body); i += 1000 {
		p, err := c.Compress(body[i:min(i+1000, len(body))])
		if err != nil {
			t.Fatal(err)
		}
		z = append(z, p...)
	}
	tail, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	z = append(z, tail...)
	c.Release()
	d := decompressor(t, stats.NewStore(), &gzipdv3.Gzip{}).NewDecompressor()
	defer d.Release()
	if got := pieces(d, z, 97); !bytes.Equal(got, body) {
		t.Fatalf("got %d bytes back, want %d", len(got), len(body))
	}
}

func TestBombIsCut(t *testing.T) {
	st := stats.NewStore()
	bomb := gzipped(t, make([]byte, 8<<20))
	d := decompressor(t, st, &gzipdv3.Gzip{MaxInflateRatio: wrapperspb.UInt32(10)}).NewDecompressor()
	defer d.Release()
	got := pieces(d, bomb, 4096)
	if len(got) > 10*len(bomb) {
		t.Errorf("%d bytes out of a %d-byte bomb", len(got), len(bomb))
	}
	if st.Counter("p.gzip.decompressor_library.zlib_data_error").Value() != 1 {
		t.Error("the cut is not counted")
	}
}

func TestBrokenStreams(t *testing.T) {
	st := stats.NewStore()
	cfg := decompressor(t, st, &gzipdv3.Gzip{})
	z := gzipped(t, []byte(strings.Repeat("x", 1000)))
	d := cfg.NewDecompressor()
	pieces(d, z[:len(z)/2], 10)
	d.Release()
	if st.Counter("p.gzip.decompressor_library.zlib_buf_error").Value() != 1 {
		t.Error("a truncated stream is not counted as zlib_buf_error")
	}
	d = cfg.NewDecompressor()
	if out := pieces(d, []byte("this is not gzip at all"), 5); len(out) != 0 {
		t.Errorf("garbage decoded to %q", out)
	}
	d.Release()
	if st.Counter("p.gzip.decompressor_library.zlib_data_error").Value() != 1 {
		t.Error("garbage is not counted as zlib_data_error")
	}
}

// TestReleaseEndsTheGoroutine checks that a body abandoned half-way
// leaves no goroutine behind.
func TestReleaseEndsTheGoroutine(t *testing.T) {
	cfg := decompressor(t, stats.NewStore(), &gzipdv3.Gzip{})
	z := gzipped(t, []byte(strings.Repeat("y", 100000)))
	before := runtime.NumGoroutine()
	for range 50 {
		d := cfg.NewDecompressor()
		d.Decompress(z[:len(z)/2])
		d.Release()
	}
	for i := 0; i < 200 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left behind", n-before)
	}
}

// TestDecompressorWindow decodes with window_bits 9 a stream whose
// matches stay within 512 bytes, and counts a data error for one that
// reaches further back, as zlib's inflate refuses it.
func TestDecompressorWindow(t *testing.T) {
	st := stats.NewStore()
	cfg, err := (Decompressor{}).CompileDecompressor(&gzipdv3.Gzip{WindowBits: wrapperspb.UInt32(9)}, st, "d.")
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 2000)
	for i := range block {
		block[i] = byte(i * 7919 >> 3)
	}
	in := bytes.Repeat(block, 20)
	var small bytes.Buffer
	w, err := deflate.NewGzipWriter(&small, deflate.Options{Level: 6, MemLevel: 8, WindowBits: 9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d := cfg.NewDecompressor()
	got := append(bytes.Clone(d.Decompress(small.Bytes())), d.Finish()...)
	d.Release()
	if !bytes.Equal(got, in) {
		t.Fatalf("within the window: %d bytes back, want %d", len(got), len(in))
	}
	dataErrors := st.Counter("d.gzip.decompressor_library.zlib_data_error")
	if v := dataErrors.Value(); v != 0 {
		t.Fatalf("zlib_data_error %d after a good stream", v)
	}
	d = cfg.NewDecompressor()
	got = append(bytes.Clone(d.Decompress(gzipped(t, in))), d.Finish()...)
	d.Release()
	if len(got) >= len(in) || dataErrors.Value() != 1 {
		t.Errorf("a 32 KiB-window stream: %d of %d bytes decoded, zlib_data_error %d; want it stopped and counted", len(got), len(in), dataErrors.Value())
	}
}

// TestZlibParameters checks that the fields reach the encoder: Envoy's
// defaults (window 12, memory level 5) give the stream zlib gives for
// them, and window_bits, memory_level and the strategy change it.
func TestZlibParameters(t *testing.T) {
	body := []byte(strings.Repeat("zlib's parameters, as Envoy passes them. ", 2000))
	gz := func(g *gzipcv3.Gzip, o deflate.Options) (got, want []byte) {
		t.Helper()
		cc, err := Compressor{}.CompileCompressor(g)
		if err != nil {
			t.Fatal(err)
		}
		c := cc.NewCompressor()
		defer c.Release()
		p, err := c.Compress(body)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p...)
		p, err = c.Finish()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p...)
		var buf bytes.Buffer
		w, err := deflate.NewGzipWriter(&buf, o)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(body)
		_ = w.Flush()
		_ = w.Close()
		return got, buf.Bytes()
	}
	for _, c := range []struct {
		g *gzipcv3.Gzip
		o deflate.Options
	}{
		{&gzipcv3.Gzip{}, deflate.Options{Level: 6, WindowBits: 12, MemLevel: 5}},
		{&gzipcv3.Gzip{WindowBits: wrapperspb.UInt32(9), MemoryLevel: wrapperspb.UInt32(1), CompressionLevel: gzipcv3.Gzip_BEST_SPEED},
			deflate.Options{Level: 1, WindowBits: 9, MemLevel: 1}},
		{&gzipcv3.Gzip{WindowBits: wrapperspb.UInt32(15), MemoryLevel: wrapperspb.UInt32(9), CompressionStrategy: gzipcv3.Gzip_RLE},
			deflate.Options{Level: 6, WindowBits: 15, MemLevel: 9, Strategy: deflate.RLE}},
		{&gzipcv3.Gzip{CompressionStrategy: gzipcv3.Gzip_FIXED, CompressionLevel: gzipcv3.Gzip_BEST_COMPRESSION},
			deflate.Options{Level: 9, WindowBits: 12, MemLevel: 5, Strategy: deflate.Fixed}},
	} {
		got, want := gz(c.g, c.o)
		if !bytes.Equal(got, want) {
			t.Errorf("%v: %d bytes, want the %d of %+v", c.g, len(got), len(want), c.o)
		}
		if d := decompressor(t, stats.NewStore(), &gzipdv3.Gzip{MaxInflateRatio: wrapperspb.UInt32(10000)}).NewDecompressor(); !bytes.Equal(pieces(d, got, 100), body) {
			t.Errorf("%v: does not round-trip", c.g)
		}
	}
}

// TestCompressorRefused checks the values outside zlib's ranges, which
// the proto's validation also refuses, at the library's own door.
func TestCompressorRefused(t *testing.T) {
	for field, g := range map[string]*gzipcv3.Gzip{
		"compression_level":    {CompressionLevel: 10},
		"window_bits":          {WindowBits: wrapperspb.UInt32(8)},
		"memory_level":         {MemoryLevel: wrapperspb.UInt32(10)},
		"compression_strategy": {CompressionStrategy: 5},
	} {
		if _, err := (Compressor{}).CompileCompressor(g); err == nil || !strings.HasPrefix(err.Error(), field+": ") {
			t.Errorf("%s: %v", field, err)
		}
	}
}
