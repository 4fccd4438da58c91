package hpack

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	xhpack "golang.org/x/net/http2/hpack"
)

// benchBlocks are a traced gRPC-style client's requests as x/net's encoder
// (the one Go clients use) writes them on one connection: the same method,
// authority and user agent each time, and a :path, x-request-id,
// traceparent and grpc-timeout that change with every request, each added
// to the dynamic table, so entries are evicted as the requests go by.
func benchBlocks(n int) [][]byte {
	rng := rand.New(rand.NewPCG(11, 13))
	hex := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0123456789abcdef"[rng.IntN(16)]
		}
		return string(b)
	}
	var buf bytes.Buffer
	enc := xhpack.NewEncoder(&buf)
	blocks := make([][]byte, n)
	for i := range blocks {
		buf.Reset()
		for _, f := range []xhpack.HeaderField{
			{Name: ":method", Value: "POST"},
			{Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: "orders.shop.svc.cluster.local:8080"},
			{Name: ":path", Value: "/shop.Orders/Get" + hex(2)},
			{Name: "content-type", Value: "application/grpc"},
			{Name: "user-agent", Value: "grpc-go/1.66.0"},
			{Name: "te", Value: "trailers"},
			{Name: "grpc-timeout", Value: fmt.Sprintf("%dm", 900+rng.IntN(200))},
			{Name: "x-request-id", Value: hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12)},
			{Name: "traceparent", Value: "00-" + hex(32) + "-" + hex(16) + "-01"},
		} {
			_ = enc.WriteField(f)
		}
		blocks[i] = bytes.Clone(buf.Bytes())
	}
	return blocks
}

// benchBlockCount is how many requests one connection of the benchmark
// sends: its first ones grow the table's buffers, once.
const benchBlockCount = 4096

// BenchmarkDecoder decodes benchBlocks, copying each field into a reused
// buffer as the HTTP/2 connection does; one op is one request's block.
func BenchmarkDecoder(b *testing.B) {
	blocks := benchBlocks(benchBlockCount)
	var sink []byte
	emit := func(f Field) {
		sink = append(sink, f.Name...)
		sink = append(sink, f.Value...)
	}
	d := NewDecoder(4096, emit)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%benchBlockCount == 0 && i > 0 {
			// A new connection: the blocks refer to the table the
			// earlier ones built.
			b.StopTimer()
			d = NewDecoder(4096, emit)
			b.StartTimer()
		}
		sink = sink[:0]
		if _, err := d.Write(blocks[i%benchBlockCount]); err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecoderXNet is BenchmarkDecoder with x/net's decoder.
func BenchmarkDecoderXNet(b *testing.B) {
	blocks := benchBlocks(benchBlockCount)
	var sink []byte
	emit := func(f xhpack.HeaderField) {
		sink = append(sink, f.Name...)
		sink = append(sink, f.Value...)
	}
	d := xhpack.NewDecoder(4096, emit)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%benchBlockCount == 0 && i > 0 {
			b.StopTimer()
			d = xhpack.NewDecoder(4096, emit)
			b.StartTimer()
		}
		sink = sink[:0]
		if _, err := d.Write(blocks[i%benchBlockCount]); err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
