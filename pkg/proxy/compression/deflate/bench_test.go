package deflate

import (
	"bytes"
	"io"
	"os"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
)

// BenchmarkGzip compresses the text corpus with zlib's parameters
// (level 6, windowBits 15, memLevel 8: nginx's and zlib's defaults) and
// with Envoy's defaults (windowBits 12, memLevel 5), beside
// klauspost's encoder at level 6, in 4 KiB sync-flushed pieces as the
// compressor filter writes.
func BenchmarkGzip(b *testing.B) {
	in, err := os.ReadFile("testdata/corpus.txt")
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, w interface {
		io.Writer
		Flush() error
		Close() error
	}, reset func()) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			reset()
			for i := 0; i < len(in); i += 4096 {
				if _, err := w.Write(in[i:min(i+4096, len(in))]); err != nil {
					b.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"zlib-L6-W15-M8", Options{Level: 6, WindowBits: 15, MemLevel: 8}},
		{"zlib-L6-W12-M5", Options{Level: 6, WindowBits: 12, MemLevel: 5}},
		{"zlib-L1-W15-M8", Options{Level: 1, WindowBits: 15, MemLevel: 8}},
		{"zlib-L9-W15-M8", Options{Level: 9, WindowBits: 15, MemLevel: 8}},
	} {
		b.Run(c.name, func(b *testing.B) {
			g, err := NewGzipWriter(io.Discard, c.o)
			if err != nil {
				b.Fatal(err)
			}
			run(b, g, func() { g.Reset(io.Discard) })
		})
	}
	for _, level := range []int{1, 6, 9} {
		b.Run("klauspost-L"+string(rune('0'+level)), func(b *testing.B) {
			k, _ := kgzip.NewWriterLevel(io.Discard, level)
			run(b, k, func() { k.Reset(io.Discard) })
		})
	}
}

// BenchmarkGunzip decodes the text corpus compressed at level 6 with a
// 512-byte window (the gzip sandbox's decompressor window) with
// Outrigger's inflate, which the decompressor uses below window_bits 15,
// beside klauspost's, which it uses at 15, reading 8 KiB at a time
// (the sandbox's chunk_size).
func BenchmarkGunzip(b *testing.B) {
	in, err := os.ReadFile("testdata/corpus.txt")
	if err != nil {
		b.Fatal(err)
	}
	var z bytes.Buffer
	g, err := NewGzipWriter(&z, Options{Level: 6, WindowBits: 9, MemLevel: 8})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.Write(in); err != nil {
		b.Fatal(err)
	}
	if err := g.Close(); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 8192)
	run := func(b *testing.B, open func(io.Reader) (io.Reader, error)) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			r, err := open(bytes.NewReader(z.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
			if err != nil || n != int64(len(in)) {
				b.Fatalf("%d bytes (%v)", n, err)
			}
		}
	}
	b.Run("outrigger-W9", func(b *testing.B) {
		run(b, func(r io.Reader) (io.Reader, error) { return NewGzipReader(r, 9) })
	})
	b.Run("klauspost", func(b *testing.B) {
		run(b, func(r io.Reader) (io.Reader, error) { return kgzip.NewReader(r) })
	})
}
