package xds

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTriggers(t *testing.T) {
	file := &FileSubscription{path: "/etc/o/lds.yaml", dir: "/etc/o", watch: watchFile}
	directory := &FileSubscription{path: "/etc/o/lds.yaml", dir: "/etc/o", watch: watchDirectory}
	tests := map[string]struct {
		name              string
		wantFile, wantDir bool
	}{
		"moved over the file":     {name: "lds.yaml", wantFile: true, wantDir: true},
		"another file moved in":   {name: "..data", wantDir: true},
		"same name, another case": {name: "LDS.yaml", wantDir: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := file.triggers(tc.name); got != tc.wantFile {
				t.Errorf("watching the file: triggers = %v, want %v", got, tc.wantFile)
			}
			if got := directory.triggers(tc.name); got != tc.wantDir {
				t.Errorf("watching the directory: triggers = %v, want %v", got, tc.wantDir)
			}
		})
	}
}

func TestWatchMovedFile(t *testing.T) {
	path := writeFile(t, t.TempDir(), "lds.yaml", ldsYAML("1"))
	f := newFixture(t, path, FileOptions{})
	if err := f.sub.Start(); err != nil {
		t.Fatal(err)
	}
	moveInto(t, path, ldsYAML("2"))
	waitFor(t, "version 2", func() bool { return f.sub.Version() == "2" })
	moveInto(t, path, ldsYAML("3"))
	waitFor(t, "version 3", func() bool { return f.sub.Version() == "3" })
	if diff := cmp.Diff([]string{"1", "2", "3"}, f.versions()); diff != "" {
		t.Errorf("applied versions (-want +got):\n%s", diff)
	}
	if f.counter("update_failure") != 0 || f.counter("update_rejected") != 0 {
		t.Errorf("stats:\n%s", f.statsText())
	}
}

// TestWatchIgnoresWritesInPlace writes the file in place, then moves a new
// version over it: only the moved version is read. The move is the
// barrier: had the write caused a reload, version 2 would have been
// applied before it.
func TestWatchIgnoresWritesInPlace(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "lds.yaml", ldsYAML("1"))
	f := newFixture(t, path, FileOptions{})
	if err := f.sub.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(ldsYAML("2")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another file written in the directory is not the watched one, nor
	// is a file moved in under another name.
	writeFile(t, dir, "other.yaml", ldsYAML("9"))
	moveInto(t, filepath.Join(dir, "another.yaml"), ldsYAML("8"))
	moveInto(t, path, ldsYAML("3"))
	waitFor(t, "version 3", func() bool { return f.sub.Version() == "3" })
	if diff := cmp.Diff([]string{"1", "3"}, f.versions()); diff != "" {
		t.Errorf("applied versions (-want +got):\n%s", diff)
	}
	if got := f.counter("update_attempt"); got != 2 {
		t.Errorf("update_attempt = %d, want 2", got)
	}
}

// TestWatchedDirectory follows a Kubernetes ConfigMap volume: the file is
// a symbolic link through ..data, and an update swaps ..data atomically.
func TestWatchedDirectory(t *testing.T) {
	dir := t.TempDir()
	version := func(v string) {
		t.Helper()
		ts := "..v" + v
		if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, ts), "lds.yaml", ldsYAML(v))
		if err := os.Symlink(ts, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("1")
	path := filepath.Join(dir, "lds.yaml")
	if err := os.Symlink(filepath.Join("..data", "lds.yaml"), path); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, path, FileOptions{WatchedDirectory: dir})
	if err := f.sub.Start(); err != nil {
		t.Fatal(err)
	}
	if f.sub.Version() != "1" {
		t.Fatalf("initial version %q, want 1", f.sub.Version())
	}
	// A file created in place is no move, so no reload: version 2's
	// swap of ..data is the one move, and the second read.
	writeFile(t, dir, "notes.txt", "not a move")
	version("2")
	waitFor(t, "version 2", func() bool { return f.sub.Version() == "2" })
	if f.counter("update_failure") != 0 || f.counter("update_rejected") != 0 || f.counter("update_attempt") != 2 {
		t.Errorf("stats:\n%s", f.statsText())
	}
}

// TestCloseStopsWatching checks that nothing is applied once Close has
// returned, even when a new file is moved into place.
func TestCloseStopsWatching(t *testing.T) {
	path := writeFile(t, t.TempDir(), "lds.yaml", ldsYAML("1"))
	f := newFixture(t, path, FileOptions{})
	if err := f.sub.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.sub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.sub.done:
	default:
		t.Fatal("the watch goroutine outlived Close")
	}
	moveInto(t, path, ldsYAML("2"))
	if diff := cmp.Diff([]string{"1"}, f.versions()); diff != "" {
		t.Errorf("applied versions (-want +got):\n%s", diff)
	}
}
