package luavm

import (
	"errors"
	"testing"
)

func TestRegistry(t *testing.T) {
	var r Registry
	opened, closed := 0, 0
	open := func() (any, func(), error) {
		opened++
		n := opened
		return &n, func() { closed++ }, nil
	}
	k := SharedKey{Kind: "k", ID: "vm", Code: "x = 1"}
	a, releaseA, err := r.Acquire(k, open)
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, _ := r.Acquire(k, open)
	if a != b || opened != 1 {
		t.Fatalf("the same key made %d sets of states", opened)
	}
	// Another script under the same id, or the same script under
	// another id, has states of its own.
	c, releaseC, _ := r.Acquire(SharedKey{Kind: "k", ID: "vm", Code: "x = 2"}, open)
	d, releaseD, _ := r.Acquire(SharedKey{Kind: "k", ID: "other", Code: "x = 1"}, open)
	e, releaseE, _ := r.Acquire(SharedKey{Kind: "k", ID: "vm", Code: "x = 1", Paths: "/p/?.lua"}, open)
	if c == a || d == a || e == a || opened != 4 || r.Len() != 4 {
		t.Fatalf("opened %d, len %d", opened, r.Len())
	}
	releaseC()
	releaseD()
	releaseE()
	releaseA()
	releaseA() // a second call of one release does nothing
	if closed != 3 || r.Len() != 1 {
		t.Fatalf("after releasing one of two holds: closed %d, len %d", closed, r.Len())
	}
	releaseB()
	if closed != 4 || r.Len() != 0 {
		t.Fatalf("after the last release: closed %d, len %d", closed, r.Len())
	}
	// The next configuration starts afresh.
	f, releaseF, _ := r.Acquire(k, open)
	if f == a || opened != 5 {
		t.Error("states outlived their last configuration")
	}
	releaseF()
	if _, _, err := r.Acquire(k, func() (any, func(), error) { return nil, nil, errors.New("no") }); err == nil || r.Len() != 0 {
		t.Errorf("a failed open: err %v, len %d", err, r.Len())
	}
}
