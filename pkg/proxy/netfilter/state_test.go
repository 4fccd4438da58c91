package netfilter

import "testing"

func TestLoadState(t *testing.T) {
	made := 0
	newInt := func() *int { made++; return new(int) }
	s := &State{}
	a := LoadState(s, newInt)
	if b := LoadState(s, newInt); a != b || made != 1 {
		t.Errorf("a second load made a new value (%d made)", made)
	}
	if first := LoadState(nil, newInt); first == LoadState(nil, newInt) {
		t.Error("a nil State kept a value")
	}
}
