package filewatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestMovesAndWrites checks that a move into the directory signals, and
// that a file written in place signals with modify (watch_modify).
func TestMovesAndWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify bool
		change func(t *testing.T, dir string)
	}{
		{"move", false, func(t *testing.T, dir string) {
			tmp := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(tmp, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "f")); err != nil {
				t.Fatal(err)
			}
		}},
		{"modify", true, func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "in-place"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte("more")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "in-place"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := Moves(dir, tc.modify, func(string) bool { return true }, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			tc.change(t, dir)
			select {
			case <-w.Moved():
			case <-time.After(10 * time.Second):
				t.Fatal("no signal for the change")
			}
		})
	}
}
