package deflate

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// readGzip decodes z with a GzipReader of windowBits, reading through
// buffers of size buf to cross every state boundary.
func readGzip(z []byte, windowBits, buf int) ([]byte, error) {
	g, err := NewGzipReader(iotest.HalfReader(bytes.NewReader(z)), windowBits)
	if err != nil {
		return nil, err
	}
	var out []byte
	p := make([]byte, buf)
	for {
		n, err := g.Read(p)
		out = append(out, p[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// goGzip compresses in with Go's gzip writer at level, with a name,
// comment and extra field in the header.
func goGzip(t *testing.T, in []byte, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Name, w.Comment, w.Extra = "file.txt", "a comment", []byte{1, 2, 3, 4}
	if _, err := w.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGzipReaderDecodesGoStreams decodes Go's stored, Huffman-only, fast
// and best streams of every input, through small and large reads.
func TestGzipReaderDecodesGoStreams(t *testing.T) {
	for name, in := range inputs(t) {
		for _, level := range []int{flate.NoCompression, flate.HuffmanOnly, flate.BestSpeed, flate.DefaultCompression, flate.BestCompression} {
			z := goGzip(t, in, level)
			for _, buf := range []int{1, 777, 64 << 10} {
				got, err := readGzip(z, 15, buf)
				if err != nil || !bytes.Equal(got, in) {
					t.Fatalf("%s, level %d, reads of %d: %d bytes (%v), want %d", name, level, buf, len(got), err, len(in))
				}
			}
		}
	}
}

// TestGzipReaderWindow decodes the encoder's streams of each window with
// that window, and refuses them with a window smaller than the farthest
// distance they use, as zlib's inflate does.
func TestGzipReaderWindow(t *testing.T) {
	in := corpus(t)[:60000]
	refused := 0
	for wb := 9; wb <= 15; wb++ {
		o := Options{Level: 6, MemLevel: 8, WindowBits: wb}
		z := compress(t, o, in, 0)
		info, err := inspect(z[10 : len(z)-8])
		if err != nil {
			t.Fatal(err)
		}
		got, err := readGzip(z, wb, 4096)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("window %d: %d bytes (%v), want %d", wb, len(got), err, len(in))
		}
		if wb == 9 {
			continue
		}
		_, err = readGzip(z, wb-1, 4096)
		tooFar := info.maxDist > 1<<(wb-1)
		if tooFar != errors.Is(err, ErrDistanceTooFar) {
			t.Errorf("window %d read with %d (farthest distance %d): error %v", wb, wb-1, info.maxDist, err)
		}
		if tooFar {
			refused++
		}
	}
	if refused == 0 {
		t.Error("no stream used a distance past the next smaller window: the refusal went untested")
	}
	// A window of 8 is taken as 9, as zlib takes it.
	z := compress(t, Options{Level: 6, MemLevel: 8, WindowBits: 9}, in, 0)
	if got, err := readGzip(z, 8, 4096); err != nil || !bytes.Equal(got, in) {
		t.Fatalf("window 8: %d bytes (%v), want %d", len(got), err, len(in))
	}
}

// TestGzipReaderMembers reads members one after another and refuses what
// follows them when it is not another member.
func TestGzipReaderMembers(t *testing.T) {
	a, b := []byte("first member "), bytes.Repeat([]byte("second "), 500)
	z := append(goGzip(t, a, 6), goGzip(t, b, 1)...)
	got, err := readGzip(z, 15, 100)
	if err != nil || string(got) != string(a)+string(b) {
		t.Fatalf("two members: %q (%v)", got, err)
	}
	if _, err := readGzip(append(z, 'x', 'y'), 15, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("two stray bytes after the members: %v, want a cut header", err)
	}
	if _, err := readGzip(append(z, bytes.Repeat([]byte{'x'}, 12)...), 15, 100); !errors.Is(err, ErrGzipHeader) {
		t.Errorf("garbage after the members: %v, want %v", err, ErrGzipHeader)
	}
	if _, err := readGzip(nil, 15, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("no input: %v, want a cut header", err)
	}
}

// TestGzipReaderBrokenStreams checks the wrapper's checks and that every
// truncation is an error, never a success or a panic.
func TestGzipReaderBrokenStreams(t *testing.T) {
	in := corpus(t)[:20000]
	z := goGzip(t, in, 6)
	for _, c := range []struct {
		name string
		edit func([]byte)
		want error
	}{
		{"magic", func(z []byte) { z[0] = 0 }, ErrGzipHeader},
		{"method", func(z []byte) { z[2] = 7 }, ErrGzipMethod},
		{"reserved flag", func(z []byte) { z[3] |= 0x80 }, ErrGzipFlags},
		{"crc", func(z []byte) { z[len(z)-8] ^= 1 }, ErrGzipCRC},
		{"length", func(z []byte) { z[len(z)-4] ^= 1 }, ErrGzipLength},
	} {
		bad := bytes.Clone(z)
		c.edit(bad)
		if _, err := readGzip(bad, 15, 4096); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	for n := range len(z) {
		if _, err := readGzip(z[:n], 15, 4096); err == nil {
			t.Fatalf("the first %d of %d bytes decoded without an error", n, len(z))
		}
	}
}

// TestInflaterRandomInput feeds noise: errors, never a panic or a hang.
func TestInflaterRandomInput(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		raw := make([]byte, rnd.IntN(300))
		for i := range raw {
			raw[i] = byte(rnd.Uint32())
		}
		f, err := NewInflater(bytes.NewReader(raw), 9+rnd.IntN(7))
		if err != nil {
			t.Fatal(err)
		}
		// A stream of at most 300 bytes cannot decode to more than
		// 258 bytes per bit; reading stops at an error or the end.
		out, _ := io.Copy(io.Discard, io.LimitReader(f, 1<<20))
		if out >= 1<<20 {
			t.Fatalf("%d bytes of noise decoded to a megabyte", len(raw))
		}
	}
}
