package requestid

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestAppendUUID: AppendUUID appends a version 4, RFC 4122 variant UUID
// in its text form after what dst holds, a different one each time.
func TestAppendUUID(t *testing.T) {
	re := regexp.MustCompile(`^prefix:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		got := string(AppendUUID([]byte("prefix:")))
		if !re.MatchString(got) {
			t.Fatalf("AppendUUID = %q", got)
		}
		if seen[got] {
			t.Fatalf("%q twice", got)
		}
		seen[got] = true
	}
	// Every hexadecimal digit appears at some position.
	digits := map[rune]bool{}
	for s := range seen {
		for _, r := range s[len("prefix:"):] {
			digits[r] = true
		}
	}
	if len(digits) != 17 {
		t.Errorf("%d distinct characters, want 16 digits and the dash", len(digits))
	}
}

// TestUUIDText compares uuidText with the text encoding/hex writes, on
// every byte value at every position and on random UUIDs.
func TestUUIDText(t *testing.T) {
	check := func(u [16]byte) {
		t.Helper()
		h := hex.EncodeToString(u[:])
		want := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
		if got := uuidText(&u); string(got[:]) != want {
			t.Fatalf("uuidText(%x) = %s, want %s", u, got[:], want)
		}
	}
	for pos := range 16 {
		for c := range 256 {
			var u [16]byte
			for i := range u {
				u[i] = byte(i * 17)
			}
			u[pos] = byte(c)
			check(u)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		var u [16]byte
		for i := range u {
			u[i] = byte(r.Uint32())
		}
		check(u)
	}
}

// TestAppendUUIDHex8: the number AppendUUIDHex8 reports is the one its
// first eight digits write.
func TestAppendUUIDHex8(t *testing.T) {
	for range 1000 {
		var hex8 uint32
		got := AppendUUIDHex8(nil, &hex8)
		if want := fmt.Sprintf("%08x", hex8); string(got[:8]) != want {
			t.Fatalf("AppendUUIDHex8 = %s, hex8 %s", got, want)
		}
	}
}
