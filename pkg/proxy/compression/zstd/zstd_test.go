package zstd

import (
	"bytes"
	"strings"
	"testing"

	zcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	zdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/decompressor/v3"
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
	cc, err := Compressor{}.CompileCompressor(compressorConfigzstd())
	if err != nil {
		t.Fatal(err)
	}
	st := stats.NewStore()
	dc, err := Decompressor{}.CompileDecompressor(decompressorConfigzstd(), st, "p.")
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
	if st.Counter(errorStatzstd).Value() == 0 {
		t.Error("the cut is not counted")
	}
}

func compressorConfigzstd() *zcv3.Zstd {
	return &zcv3.Zstd{CompressionLevel: wrapperspb.UInt32(3), EnableChecksum: true}
}
func decompressorConfigzstd() *zdv3.Zstd { return &zdv3.Zstd{} }

const errorStatzstd = "p.zstd.decompressor_library.zstd_generic_error"
