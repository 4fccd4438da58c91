package httpconn

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestHPACKMemoSameBytes sends random response fields through the memo:
// each encoding is the memo-less one byte for byte, hits and collisions
// alike, and decodes back to the field.
func TestHPACKMemoSameBytes(t *testing.T) {
	names := []string{"server", "date", "content-type", "content-length", "x-envoy-upstream-service-time",
		"x-custom", "vary", "set-cookie", "a", "", strings.Repeat("n", 64), strings.Repeat("n", 65),
		// An HTTP/1 upstream's names, and fields HTTP/2 forbids.
		"Server", "Content-Type", "X-Custom", "Connection", "keep-alive", "Transfer-Encoding", "UPGRADE",
		strings.Repeat("N", 65)}
	values := []string{"", "0", "1", "12", "envoy", "text/plain", "Sat, 28 Nov 2026 09:55:00 GMT",
		"application/grpc", strings.Repeat("v", 64), strings.Repeat("w", 65)}
	rng := rand.New(rand.NewPCG(19, 2026))
	m := hpackMemo{huff: true}
	var got, want []byte
	dec := hpack.NewDecoder(4096, nil)
	for i := range 20000 {
		name, value := names[rng.IntN(len(names))], values[rng.IntN(len(values))]
		if rng.IntN(8) == 0 {
			value = strconv.Itoa(rng.IntN(1000))
		}
		// Positions as heads of up to 20 fields have them, and none.
		got = m.appendField(got[:0], rng.IntN(21)-1, name, value)
		lower := strings.ToLower(name)
		if connectionSpecific(lower) {
			if len(got) != 0 {
				t.Fatalf("field %d %q: %q: memo %x, want nothing", i, name, value, got)
			}
			continue
		}
		want = appendHPACKField(want[:0], lower, value, true)
		if !bytes.Equal(got, want) {
			t.Fatalf("field %d %q: %q: memo %x, want %x", i, name, value, got, want)
		}
		fields, err := dec.DecodeFull(got)
		if err != nil || len(fields) != 1 || fields[0].Name != lower || fields[0].Value != value {
			t.Fatalf("field %d %q: %q decodes to %v, %v", i, name, value, fields, err)
		}
	}
}

// TestHPACKMemoNoAllocations: a head whose fields repeat allocates nothing
// once the memo holds them, and the memo keeps no view of the caller's
// buffers (a value changed in place is not served from it).
func TestHPACKMemoNoAllocations(t *testing.T) {
	m := hpackMemo{huff: true}
	buf := []byte("text/plain")
	value := view(buf)
	dst := make([]byte, 0, 256)
	head := func() {
		dst = m.appendField(dst[:0], 0, "server", "envoy")
		dst = m.appendField(dst, 1, "Content-Type", value)
		dst = m.appendField(dst, 2, "x-envoy-upstream-service-time", "3")
	}
	head()
	if allocs := testing.AllocsPerRun(100, head); allocs != 0 {
		t.Fatalf("a repeated head allocated %v times", allocs)
	}
	copy(buf, "text/html!")
	got := m.appendField(nil, 1, "Content-Type", value)
	if want := appendHPACKField(nil, "content-type", "text/html!", true); !bytes.Equal(got, want) {
		t.Fatalf("after the value changed in place: %x, want %x", got, want)
	}
}

// benchHead is a usual proxied response head: the fields an HTTP/1.1
// upstream's 128-byte answer gets on its way to an HTTP/2 client.
var benchHead = [][2]string{
	{"content-type", "text/plain"},
	{"date", "Sat, 28 Nov 2026 09:55:00 GMT"},
	{"server", "envoy"},
	{"x-envoy-upstream-service-time", "0"},
	{"content-length", "128"},
}

// BenchmarkHPACKResponseHead encodes the head as every response did
// before the memo.
func BenchmarkHPACKResponseHead(b *testing.B) {
	dst := make([]byte, 0, 256)
	for b.Loop() {
		dst = appendHPACKStatus(dst[:0], 200, true)
		for _, f := range benchHead {
			dst = appendHPACKField(dst, f[0], f[1], true)
		}
	}
}

// BenchmarkHPACKResponseHeadMemo encodes it through a connection's memo.
func BenchmarkHPACKResponseHeadMemo(b *testing.B) {
	m := hpackMemo{huff: true}
	dst := make([]byte, 0, 256)
	for b.Loop() {
		dst = appendHPACKStatus(dst[:0], 200, true)
		for i, f := range benchHead {
			dst = m.appendField(dst, i, f[0], f[1])
		}
	}
}
