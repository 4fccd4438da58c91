// Package golden compares test output with files under testdata and
// rewrites them when tests run with -update. Every test package uses it, so
// the flag is defined once and the comparison reads the same everywhere.
// Only tests import it.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is the -update flag of every test binary that imports this package.
// A flag is process state by nature; it is set once, before tests run.
var update = flag.Bool("update", false, "rewrite golden files")

// Update reports whether golden files are being rewritten (-update).
func Update() bool { return *update }

// Check compares got with the file at path, or writes got there with
// -update. A missing file fails with a hint to run -update; a difference
// fails with a line diff.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("create golden directory: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("write golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", path, diff)
	}
}
