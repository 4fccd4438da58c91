package deflate

import (
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
