package deflate

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// corpus is the text the size comparisons use.
func corpus(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// inputs are the tricky inputs of the round trips.
func inputs(t testing.TB) map[string][]byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 40000)
	for i := range noise {
		noise[i] = byte(rnd.Uint32())
	}
	// A 40 KB random block twice: the repeat is further back than any
	// window, so it must not come out as one match.
	repeats := append(append([]byte{}, noise...), noise...)
	return map[string][]byte{
		"empty":          {},
		"one byte":       {'x'},
		"incompressible": noise,
		"long run":       bytes.Repeat([]byte{'a'}, 70000),
		"beyond window":  repeats,
		"text":           corpus(t)[:60000],
	}
}

// compress gzips in with o, writing it in pieces of chunk bytes with a
// sync flush after each (chunk 0: in one write, no flush).
func compress(t testing.TB, o Options, in []byte, chunk int) []byte {
	return compressChecked(t, o, in, chunk, false)
}

// compressChecked is compress that, when asked, checks after each flush
// that the output so far decodes to the input so far.
func compressChecked(t testing.TB, o Options, in []byte, chunk int, checkFlushes bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	g, err := NewGzipWriter(&buf, o)
	if err != nil {
		t.Fatal(err)
	}
	if chunk == 0 {
		if _, err := g.Write(in); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; chunk > 0 && i < len(in); i += chunk {
		if _, err := g.Write(in[i:min(i+chunk, len(in))]); err != nil {
			t.Fatal(err)
		}
		if err := g.Flush(); err != nil {
			t.Fatal(err)
		}
		if !checkFlushes {
			continue
		}
		// What is out so far decodes to what went in so far.
		r, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		if want := in[:min(i+chunk, len(in))]; !bytes.Equal(got, want) {
			t.Fatalf("%+v: after a flush at %d, %d bytes decode, want %d", o, i, len(got), len(want))
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// check decodes z with compress/gzip and with the test's own decoder
// and checks the window and the block types.
func check(t *testing.T, o Options, in, z []byte) blockInfo {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("%+v: %d bytes back (%v), want %d", o, len(got), err, len(in))
	}
	info, err := inspect(z[10 : len(z)-8])
	if err != nil || !bytes.Equal(info.out, in) {
		t.Fatalf("%+v: the token decoder: %v", o, err)
	}
	if limit := 1<<max(o.WindowBits, 9) - minLookahead; info.maxDist > limit {
		t.Errorf("%+v: a distance of %d, past the window's %d", o, info.maxDist, limit)
	}
	if o.Strategy == Fixed && info.types[2] != 0 {
		t.Errorf("%+v: %d dynamic blocks", o, info.types[2])
	}
	if (o.Strategy == HuffmanOnly) && info.maxDist != 0 {
		t.Errorf("%+v: a match with Huffman only", o)
	}
	if o.Strategy == RLE && info.maxDist > 1 {
		t.Errorf("%+v: RLE matched at distance %d", o, info.maxDist)
	}
	return info
}

func TestRoundTrips(t *testing.T) {
	in := inputs(t)
	for _, level := range []int{DefaultLevel, 0, 1, 3, 4, 6, 9} {
		for s := DefaultStrategy; s <= Fixed; s++ {
			for _, wb := range []int{8, 9, 15} {
				for _, ml := range []int{1, 9} {
					o := Options{Level: level, WindowBits: wb, MemLevel: ml, Strategy: s}
					for name, b := range in {
						chunk := 0
						if name == "text" || name == "one byte" || name == "empty" {
							chunk = 7000
						}
						t.Run(fmt.Sprintf("L%d/S%d/W%d/M%d/%s", level, s, wb, ml, name), func(t *testing.T) {
							check(t, o, b, compressChecked(t, o, b, chunk, true))
						})
					}
				}
			}
		}
	}
}

// TestTheWindowIsUsed checks that the window bounds distances and that
// a bigger window finds the far repeats.
func TestTheWindowIsUsed(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	block := make([]byte, 3000)
	for i := range block {
		block[i] = byte(rnd.Uint32())
	}
	in := bytes.Repeat(block, 10)
	small := Options{Level: 6, WindowBits: 10, MemLevel: 8}
	big := Options{Level: 6, WindowBits: 15, MemLevel: 8}
	zs, zb := compress(t, small, in, 0), compress(t, big, in, 0)
	is, ib := check(t, small, in, zs), check(t, big, in, zb)
	if is.maxDist != 0 || len(zs) < len(in) {
		t.Errorf("a 1 KiB window matched at %d, %d bytes out of %d", is.maxDist, len(zs), len(in))
	}
	if ib.maxDist != len(block) || len(zb) > len(in)/5 {
		t.Errorf("a 32 KiB window: longest distance %d, %d bytes out of %d", ib.maxDist, len(zb), len(in))
	}
}

// TestFixedStrategy checks that FIXED sends compressible data in fixed
// blocks and the default strategy in dynamic ones.
func TestFixedStrategy(t *testing.T) {
	in := corpus(t)[:50000]
	o := Options{Level: 6, WindowBits: 12, MemLevel: 5, Strategy: Fixed}
	if info := check(t, o, in, compress(t, o, in, 0)); info.types[1] == 0 || info.types[2] != 0 {
		t.Errorf("FIXED: blocks by type %v", info.types)
	}
	o.Strategy = DefaultStrategy
	if info := check(t, o, in, compress(t, o, in, 0)); info.types[2] == 0 {
		t.Errorf("DEFAULT_STRATEGY: blocks by type %v", info.types)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []Options{
		{Level: 10, WindowBits: 15, MemLevel: 8},
		{Level: -2, WindowBits: 15, MemLevel: 8},
		{Level: 6, WindowBits: 7, MemLevel: 8},
		{Level: 6, WindowBits: 16, MemLevel: 8},
		{Level: 6, WindowBits: 15, MemLevel: 0},
		{Level: 6, WindowBits: 15, MemLevel: 10},
		{Level: 6, WindowBits: 15, MemLevel: 8, Strategy: 5},
	} {
		if _, err := NewGzipWriter(io.Discard, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestFlushes checks zlib's flush rules: a first flush sends the empty
// block, a second one with nothing written in between sends nothing,
// and Reset starts an identical stream.
func TestFlushes(t *testing.T) {
	var buf bytes.Buffer
	g, err := NewGzipWriter(&buf, Options{Level: 6, WindowBits: 12, MemLevel: 5})
	if err != nil {
		t.Fatal(err)
	}
	_ = g.Flush()
	if want := "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\xff\xff"; buf.String() != want {
		t.Errorf("first flush: %q, want %q", buf.String(), want)
	}
	n := buf.Len()
	_ = g.Flush()
	if buf.Len() != n {
		t.Errorf("a second flush added %d bytes", buf.Len()-n)
	}
	in := corpus(t)[:20000]
	first := compress(t, Options{Level: 6, WindowBits: 12, MemLevel: 5}, in, 1000)
	buf.Reset()
	g.Reset(&buf)
	for i := 0; i < len(in); i += 1000 {
		_, _ = g.Write(in[i : i+1000])
		_ = g.Flush()
	}
	_ = g.Close()
	if !bytes.Equal(buf.Bytes(), first) {
		t.Error("a reset writer's stream differs from a new one's")
	}
}

// TestSizesBesideZlib compresses the corpus with python3's zlib and
// with the encoder, with the same parameters, in one piece and in
// sync-flushed 4 KiB pieces, and compares the sizes. The encoder
// follows zlib 1.2's deflate, so with that zlib the streams are
// identical; other builds (zlib-ng) differ more and are skipped.
func TestSizesBesideZlib(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	ver, err := exec.Command(py, "-c", "import zlib; print(zlib.ZLIB_RUNTIME_VERSION)").Output()
	if err != nil || strings.Contains(string(ver), "ng") {
		t.Skipf("python3's zlib: %q %v", ver, err)
	}
	in := corpus(t)[:100000]
	var cases []Options
	for level := 1; level <= 9; level++ {
		for s := DefaultStrategy; s <= Fixed; s++ {
			for _, wb := range []int{9, 12, 15} {
				for _, ml := range []int{1, 5, 9} {
					if s == DefaultStrategy || (wb == 12 && ml == 5) || level == 6 {
						cases = append(cases, Options{Level: level, WindowBits: wb, MemLevel: ml, Strategy: s})
					}
				}
			}
		}
	}
	want := zlibGzip(t, py, cases, len(in))
	identical := 0
	for i, o := range cases {
		for k, chunk := range []int{0, 4096} {
			got := compress(t, o, in, chunk)
			w := want[2*i+k]
			if bytes.Equal(got, w) {
				identical++
				continue
			}
			if d := float64(len(got)-len(w)) / float64(len(w)); d > 0.02 || d < -0.02 {
				t.Errorf("%+v chunk %d: %d bytes, zlib %d", o, chunk, len(got), len(w))
			}
		}
	}
	t.Logf("zlib %s: %d of %d streams identical", strings.TrimSpace(string(ver)), identical, 2*len(cases))
}

// zlibGzip runs python3's zlib on the first n bytes of the corpus with
// each case's parameters, in one piece and then in 4 KiB pieces.
func zlibGzip(t *testing.T, py string, cases []Options, n int) [][]byte {
	t.Helper()
	var params strings.Builder
	for _, o := range cases {
		fmt.Fprintf(&params, "(%d,%d,%d,%d),", o.Level, o.WindowBits, o.MemLevel, o.Strategy)
	}
	script := fmt.Sprintf(`
import struct, sys, zlib
d = open("testdata/corpus.txt", "rb").read()[:%d]
for (l, wb, ml, s) in [%s]:
    for chunk in (0, 4096):
        c = zlib.compressobj(l, zlib.DEFLATED, 16+wb, ml, s)
        out = []
        if chunk:
            for i in range(0, len(d), chunk):
                out.append(c.compress(d[i:i+chunk]))
                out.append(c.flush(zlib.Z_SYNC_FLUSH))
        else:
            out.append(c.compress(d))
        out.append(c.flush())
        z = b"".join(out)
        sys.stdout.buffer.write(struct.pack("<I", len(z)) + z)
`, n, params.String())
	out, err := exec.Command(py, "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var streams [][]byte
	for len(out) >= 4 {
		k := int(binary.LittleEndian.Uint32(out))
		streams = append(streams, out[4:4+k])
		out = out[4+k:]
	}
	if len(streams) != 2*len(cases) {
		t.Fatalf("%d streams from python3, want %d", len(streams), 2*len(cases))
	}
	return streams
}
