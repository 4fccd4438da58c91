package http1

import (
	"math/rand/v2"
	"testing"
)

// TestValidValue: the word-at-a-time check agrees with the byte table
// for every byte value at every position of values of 0 to 24 bytes, and
// for random values.
func TestValidValue(t *testing.T) {
	ref := func(b []byte) bool {
		for _, c := range b {
			if chars[c]&classValue == 0 {
				return false
			}
		}
		return true
	}
	for n := range 25 {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		for pos := range n {
			for c := range 256 {
				b[pos] = byte(c)
				if got, want := validValue(b), ref(b); got != want {
					t.Fatalf("validValue(%q) = %v, want %v", b, got, want)
				}
			}
			b[pos] = 'x'
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			// Mostly visible bytes, some of anything.
			if r.IntN(16) == 0 {
				b[i] = byte(r.IntN(256))
			} else {
				b[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		if got, want := validValue(b), ref(b); got != want {
			t.Fatalf("validValue(%q) = %v, want %v", b, got, want)
		}
	}
}
