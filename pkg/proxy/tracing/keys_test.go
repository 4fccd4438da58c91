package tracing

import (
	"strings"
	"testing"
)

// TestKnownKeyIndex: each known key's string is recognised by its
// address, and no other string is: the same bytes elsewhere, a key cut
// short or started later, the empty string.
func TestKnownKeyIndex(t *testing.T) {
	for k := range NumKnownKeys {
		key := Key(k)
		if key != KnownKeyName(k) {
			t.Errorf("Key(%d) = %q, want %q", k, key, KnownKeyName(k))
		}
		if got, ok := KnownKeyIndex(key); !ok || got != k {
			t.Errorf("KnownKeyIndex(Key(%d)) = %d, %v", k, got, ok)
		}
		for _, s := range []string{strings.Clone(key), key[:len(key)-1], key[1:], ""} {
			if got, ok := KnownKeyIndex(s); ok {
				t.Errorf("KnownKeyIndex(%q) = %d, true; want false (not Key(%d))", s, got, k)
			}
		}
	}
	if _, ok := KnownKeyIndex("http.url"); ok {
		t.Error("a literal of a known key's bytes was recognised")
	}
}
