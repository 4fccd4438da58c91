package brotli

import (
	"bytes"
	"strings"
	"testing"

	brcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	brdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/decompressor/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// roundTrip compresses body in pieces of size and decodes it in others.
func roundTrip(t *testing.T, cc compression.CompressorConfig, dc compression.DecompressorConfig, body []byte, size int) []byte {
	t.Helper()
	c := cc.NewCompressor()
	defer c.Release()
	var z []byte
	for i := 0; i < len(body); i += size {
		p, err := c.Compress(body[i:min(i+size, len(body))])
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
	d := dc.NewDecompressor()
	defer d.Release()
	var out []byte
	for i := 0; i < len(z); i += 50 {
		out = append(out, d.Decompress(z[i:min(i+50, len(z))])...)
	}
	return append(out, d.Finish()...)
}

func TestRoundTripAndBomb(t *testing.T) {
	cc, err := Compressor{}.CompileCompressor(compressorConfigbrotli())
	if err != nil {
		t.Fatal(err)
	}
	st := stats.NewStore()
	dc, err := Decompressor{}.CompileDecompressor(decompressorConfigbrotli(), st, "p.")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("a body of some length ", 3000))
	if got := roundTrip(t, cc, dc, body, 777); !bytes.Equal(got, body) {
		t.Fatalf("got %d bytes back, want %d", len(got), len(body))
	}
	bomb := make([]byte, 4<<20)
	if got := roundTrip(t, cc, dc, bomb, len(bomb)); len(got) >= len(bomb) {
		t.Errorf("a bomb inflated to %d bytes", len(got))
	}
	if st.Counter(errorStatbrotli).Value() == 0 {
		t.Error("the cut is not counted")
	}
}

func compressorConfigbrotli() *brcv3.Brotli   { return &brcv3.Brotli{Quality: wrapperspb.UInt32(5)} }
func decompressorConfigbrotli() *brdv3.Brotli { return &brdv3.Brotli{} }

const errorStatbrotli = "p.brotli.decompressor_library.brotli_error"

func TestRedundantInput(t *testing.T) {
	cc, err := Compressor{}.CompileCompressor(compressorConfigbrotli())
	if err != nil {
		t.Fatal(err)
	}
	c := cc.NewCompressor()
	z, _ := c.Compress([]byte("hello"))
	tail, _ := c.Finish()
	z = append(append([]byte(nil), z...), tail...)
	c.Release()
	st := stats.NewStore()
	dc, err := Decompressor{}.CompileDecompressor(decompressorConfigbrotli(), st, "p.")
	if err != nil {
		t.Fatal(err)
	}
	d := dc.NewDecompressor()
	defer d.Release()
	out := append([]byte(nil), d.Decompress(z)...)
	out = append(out, d.Decompress([]byte("more after the end"))...)
	out = append(out, d.Finish()...)
	if string(out) != "hello" {
		t.Errorf("decoded %q", out)
	}
	if st.Counter("p.brotli.decompressor_library.brotli_redundant_input").Value() != 1 ||
		st.Counter("p.brotli.decompressor_library.brotli_error").Value() != 1 {
		t.Error("input after the end is not counted")
	}
}
