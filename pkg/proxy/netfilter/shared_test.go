package netfilter

import (
	goruntime "runtime"
	"testing"
	"time"
)

type sharedKey struct{ name string }

func TestShared(t *testing.T) {
	s := NewShared()
	made := 0
	newInt := func() *int { made++; return new(int) }
	func() {
		a := LoadShared(s, sharedKey{"a"}, newInt)
		if b := LoadShared(s, sharedKey{"a"}, newInt); a != b || made != 1 {
			t.Fatalf("a key's second load made a new value (%d made)", made)
		}
		if c := LoadShared(s, sharedKey{"c"}, newInt); c == a || made != 2 {
			t.Fatal("another key shares the value")
		}
	}()
	// Once nothing holds a value, it goes, and its key with it.
	deadline := time.Now().Add(5 * time.Second)
	for s.Len() > 0 && time.Now().Before(deadline) {
		goruntime.GC()
		time.Sleep(time.Millisecond)
	}
	if s.Len() != 0 {
		t.Errorf("%d values kept that nothing holds", s.Len())
	}
	if LoadShared(s, sharedKey{"a"}, newInt); made != 3 {
		t.Error("a key whose value went did not make a new one")
	}
	// A nil Shared shares nothing.
	if first := LoadShared(nil, sharedKey{"a"}, newInt); first == LoadShared(nil, sharedKey{"a"}, newInt) {
		t.Error("a nil Shared shared a value")
	}
}
