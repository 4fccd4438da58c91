package requestid

import (
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
