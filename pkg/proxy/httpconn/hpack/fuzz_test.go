package hpack

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	xhpack "golang.org/x/net/http2/hpack"
)

// maxFuzzBlocks bounds how many blocks one input is read as.
const maxFuzzBlocks = 16

// FuzzDecoder decodes the same blocks with this decoder and x/net's, on
// one connection's worth of state each, and wants the same fields or an
// error from both. An input is a sequence of blocks, each a length byte
// and that many bytes, fed in fragments of chunk bytes; maxStr is the
// string limit (0: none). The two decoders differ on purpose in three
// ways, which end the comparison: a size update after a field is an error
// here (RFC 7541 §4.2) which x/net lets through when its table is empty;
// x/net refuses a second size update at a block's start when its table is
// not empty, which §4.2 allows; and integers over 32 bits or padded past
// five continuation bytes are errors here, where x/net wraps or takes
// them.
func FuzzDecoder(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed, uint8(0), uint16(0))
		f.Add(seed, uint8(3), uint16(16))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, maxStr uint16) {
		ours := newCollector(4096)
		ours.d.SetMaxStringLength(int(maxStr))
		var theirs []xhpack.HeaderField
		x := xhpack.NewDecoder(4096, func(f xhpack.HeaderField) { theirs = append(theirs, f) })
		x.SetMaxStringLength(int(maxStr))
		for range maxFuzzBlocks {
			if len(data) == 0 {
				return
			}
			n := min(int(data[0]), len(data)-1)
			block := data[1 : 1+n]
			data = data[1+n:]

			got, err := ours.block(block, int(chunk))
			theirs = nil
			xerr := xblock(x, block, int(chunk))
			switch {
			case err != nil && xerr != nil:
				return
			case err == errSizeUpdateLate || err == errIntOverflow:
				return
			case xerr != nil && strings.Contains(xerr.Error(), "size update MUST occur"):
				return
			case err != nil || xerr != nil:
				t.Fatalf("block %x: ours %v, x/net %v", block, err, xerr)
			}
			if len(got) != len(theirs) {
				t.Fatalf("block %x: %d fields, x/net %d", block, len(got), len(theirs))
			}
			for i, f := range got {
				g := theirs[i]
				if f.Name != g.Name || f.Value != g.Value || f.Sensitive != g.Sensitive {
					t.Fatalf("block %x: field %d is %+v, x/net %+v", block, i, f, g)
				}
			}
			if size, _ := ours.d.DynamicTableSize(); size > 4096 {
				t.Fatalf("table size %d", size)
			}
		}
	})
}

// xblock decodes a block with x/net's decoder in fragments of chunk bytes.
func xblock(x *xhpack.Decoder, b []byte, chunk int) error {
	if chunk <= 0 {
		chunk = len(b) + 1
	}
	for len(b) > 0 {
		n := min(chunk, len(b))
		if _, err := x.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return x.Close()
}

// fuzzSeeds are the RFC's examples, blocks of random requests from x/net's
// encoder (with table size changes), and malformed blocks, each as the
// fuzz target reads them.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	frame := func(blocks ...[]byte) []byte {
		var b []byte
		for _, bl := range blocks {
			if len(bl) > 255 {
				bl = bl[:255]
			}
			b = append(b, byte(len(bl)))
			b = append(b, bl...)
		}
		return b
	}
	for _, ex := range rfcExamples {
		var blocks [][]byte
		for _, s := range ex.steps {
			blocks = append(blocks, unhex(t, s.block))
		}
		seeds = append(seeds, frame(blocks...))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		blocks, _ := encodeRandom(rng, 6, 6)
		seeds = append(seeds, frame(blocks...))
	}
	for _, bad := range []string{"80", "be", "ff ff ff ff ff 7f", "3fe2 1f", "82 20", "0003 6162", "0084 ffff ffff 00", "0082 1fff 00", "7f00 0161"} {
		seeds = append(seeds, frame(unhex(t, bad)))
	}
	return seeds
}

// requestFields returns a random request's fields: the usual pseudo
// fields, some regular ones that repeat between requests, and values that
// change with each request as real clients' do.
func requestFields(rng *rand.Rand) []xhpack.HeaderField {
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[rng.IntN(16)]
		}
		return string(b)
	}
	fs := []xhpack.HeaderField{
		{Name: ":method", Value: []string{"GET", "POST", "PUT"}[rng.IntN(3)]},
		{Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: []string{"svc.ns.svc.cluster.local", "example.com:8080"}[rng.IntN(2)]},
		{Name: ":path", Value: "/api/v1/items/" + hex(rng.IntN(12))},
		{Name: "x-request-id", Value: hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12)},
		{Name: "traceparent", Value: "00-" + hex(32) + "-" + hex(16) + "-01"},
	}
	if rng.IntN(2) == 0 {
		fs = append(fs, xhpack.HeaderField{Name: "grpc-timeout", Value: fmt.Sprintf("%dm", rng.IntN(100000))})
	}
	if rng.IntN(2) == 0 {
		fs = append(fs, xhpack.HeaderField{Name: "user-agent", Value: "grpc-go/1.66.0"})
	}
	if rng.IntN(3) == 0 {
		fs = append(fs, xhpack.HeaderField{Name: "authorization", Value: "Bearer " + hex(40), Sensitive: true})
	}
	for range rng.IntN(4) {
		// Arbitrary bytes, Huffman's rare long codes included.
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		fs = append(fs, xhpack.HeaderField{Name: "x-" + hex(rng.IntN(6)), Value: string(b)})
	}
	return fs
}

// encodeRandom encodes n random requests with one x/net encoder, changing
// its table size now and then (which puts size updates at the start of
// the next block), and returns the blocks and their fields.
func encodeRandom(rng *rand.Rand, n, tableChanges int) ([][]byte, [][]xhpack.HeaderField) {
	var buf bytes.Buffer
	enc := xhpack.NewEncoder(&buf)
	var blocks [][]byte
	var fields [][]xhpack.HeaderField
	for range n {
		if tableChanges > 0 && rng.IntN(4) == 0 {
			tableChanges--
			enc.SetMaxDynamicTableSize([]uint32{0, 64, 256, 1024, 4096}[rng.IntN(5)])
		}
		fs := requestFields(rng)
		buf.Reset()
		for _, f := range fs {
			if err := enc.WriteField(f); err != nil {
				panic(err)
			}
		}
		blocks = append(blocks, bytes.Clone(buf.Bytes()))
		fields = append(fields, fs)
	}
	return blocks, fields
}

// TestRoundTripXNetEncoder decodes random requests encoded by x/net's
// encoder, whole and in fragments, and wants the fields it encoded.
func TestRoundTripXNetEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 19))
	for _, chunk := range []int{0, 1, 7, 64} {
		blocks, fields := encodeRandom(rng, 300, 40)
		c := newCollector(4096)
		for i, b := range blocks {
			got, err := c.block(b, chunk)
			if err != nil {
				t.Fatalf("chunk %d, block %d: %v", chunk, i, err)
			}
			if len(got) != len(fields[i]) {
				t.Fatalf("chunk %d, block %d: %d fields, want %d", chunk, i, len(got), len(fields[i]))
			}
			for j, f := range got {
				w := fields[i][j]
				if f.Name != w.Name || f.Value != w.Value || f.Sensitive != w.Sensitive {
					t.Fatalf("chunk %d, block %d, field %d: %+v, want %+v", chunk, i, j, f, w)
				}
			}
		}
	}
}

// TestHuffmanRoundTrip decodes x/net's Huffman coding of random strings
// of every byte value, and random bytes as x/net's decoder does.
func TestHuffmanRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		b := make([]byte, rng.IntN(64))
		for j := range b {
			b[j] = byte(rng.IntN(256))
			if i%2 == 0 {
				b[j] = "abcdefghijklmnopqrstuvwxyz0123456789-/"[rng.IntN(38)]
			}
		}
		enc := xhpack.AppendHuffmanString(nil, string(b))
		got, err := appendHuffman(nil, enc, 0)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%x: decoded %x, %v", b, got, err)
		}
	}
	// Arbitrary bytes, mostly ones (long codes, EOS, padding): x/net's
	// decoder and this one agree on the string or on an error.
	for range 20000 {
		b := make([]byte, rng.IntN(8))
		for j := range b {
			v := rng.IntN(1 << 16)
			b[j] = byte(v) | byte(v>>8)
		}
		got, err := appendHuffman(nil, b, 0)
		want, xerr := xhpack.HuffmanDecodeToString(b)
		if (err != nil) != (xerr != nil) || err == nil && string(got) != want {
			t.Fatalf("%x: %q %v, x/net %q %v", b, got, err, want, xerr)
		}
	}
	if _, err := appendHuffman(nil, xhpack.AppendHuffmanString(nil, "abcdef"), 5); !errors.Is(err, ErrStringLength) {
		t.Fatalf("6 bytes under a limit of 5: %v", err)
	}
}
