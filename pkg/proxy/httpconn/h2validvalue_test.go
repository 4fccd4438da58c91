package httpconn

import (
	"math/rand/v2"
	"testing"
)

// TestValidValueWordAtATime compares validValue with a byte-at-a-time
// check on values of every length up to 40 holding each byte value at
// each position, and on random values.
func TestValidValueWordAtATime(t *testing.T) {
	slow := func(v string) bool {
		for i := 0; i < len(v); i++ {
			if v[i] == 0 || v[i] == '\r' || v[i] == '\n' {
				return false
			}
		}
		return true
	}
	buf := make([]byte, 40)
	for n := 0; n <= len(buf); n++ {
		for i := range buf {
			buf[i] = 'a' + byte(i%26)
		}
		if v := string(buf[:n]); !validValue(v) {
			t.Fatalf("%q refused", v)
		}
		for pos := 0; pos < n; pos++ {
			for c := range 256 {
				buf[pos] = byte(c)
				v := string(buf[:n])
				if got, want := validValue(v), slow(v); got != want {
					t.Fatalf("%q: %v, want %v", v, got, want)
				}
			}
			buf[pos] = 'x'
		}
	}
	rng := rand.New(rand.NewPCG(19, 23))
	for range 100000 {
		b := make([]byte, rng.IntN(64))
		for i := range b {
			// Mostly printable bytes, some control and high ones.
			switch rng.IntN(16) {
			case 0:
				b[i] = byte(rng.IntN(32))
			case 1:
				b[i] = byte(128 + rng.IntN(128))
			default:
				b[i] = byte(32 + rng.IntN(95))
			}
		}
		if got, want := validValue(string(b)), slow(string(b)); got != want {
			t.Fatalf("%q: %v, want %v", b, got, want)
		}
	}
}
