package tracing

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// TestAppendHexMatchesEncodingHex compares the word-wise encoding with
// encoding/hex on edge values and random ids.
func TestAppendHexMatchesEncodingHex(t *testing.T) {
	words := []uint64{0, 1, 9, 10, 15, 16, 0x0123456789abcdef, 0xfedcba9876543210, 0x9999999999999999, 0xaaaaaaaaaaaaaaaa, ^uint64(0)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		words = append(words, r.Uint64())
	}
	for _, w := range words {
		var raw [8]byte
		binary.BigEndian.PutUint64(raw[:], w)
		if got, want := string(AppendHex64([]byte("x"), w)), "x"+hex.EncodeToString(raw[:]); got != want {
			t.Fatalf("AppendHex64(%#x) = %q, want %q", w, got, want)
		}
		var s SpanID
		copy(s[:], raw[:])
		if got := string(s.AppendHex(nil)); got != s.Hex() {
			t.Fatalf("SpanID.AppendHex = %q, want %q", got, s.Hex())
		}
		var id TraceID
		binary.BigEndian.PutUint64(id[:8], r.Uint64())
		copy(id[8:], raw[:])
		if got := string(id.AppendHex(nil)); got != id.Hex() {
			t.Fatalf("TraceID.AppendHex = %q, want %q", got, id.Hex())
		}
	}
}
