package filewatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestSignalsCoalesce checks that moves made while a signal is pending
// make one more signal, not one each.
func TestSignalsCoalesce(t *testing.T) {
	w := &Watcher{moved: make(chan struct{}, 1)}
	for range 5 {
		w.signal()
	}
	if got := len(w.moved); got != 1 {
		t.Errorf("%d signals pending after five moves, want 1", got)
	}
}

// TestMovesSignalsAcceptedNames moves files into a watched directory: a
// name accept refuses does not signal, the accepted one does, and Close
// closes Moved.
func TestMovesSignalsAcceptedNames(t *testing.T) {
	dir := t.TempDir()
	w, err := Moves(dir, false, func(name string) bool { return name == "want" }, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	move := func(name string) {
		t.Helper()
		tmp := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	move("other")
	select {
	case <-w.Moved():
		t.Fatal("a move of another name signalled")
	case <-time.After(200 * time.Millisecond):
	}
	move("want")
	select {
	case <-w.Moved():
	case <-time.After(10 * time.Second):
		t.Fatal("no signal for the accepted name")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.Moved(); ok {
		t.Error("Moved still open after Close")
	}
}

// TestMovesMissingDirectory: a directory that does not exist cannot be
// watched.
func TestMovesMissingDirectory(t *testing.T) {
	if _, err := Moves(filepath.Join(t.TempDir(), "none"), false, func(string) bool { return true }, logr.Discard()); err == nil {
		t.Fatal("Moves of a missing directory succeeded")
	}
}
