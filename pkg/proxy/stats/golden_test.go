package stats

import (
	"path/filepath"
	"testing"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// checkGolden compares got with testdata/<name>, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}
