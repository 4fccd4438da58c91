package server

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// The test binary drops its own executable's pages and keeps running:
// what it touches next faults back in, unchanged.
func TestDropExecutablePages(t *testing.T) {
	exe, err := selfExecutable()
	if err != nil {
		t.Fatal(err)
	}
	resident := func() (n int64) {
		t.Helper()
		maps, err := executableMappings(exe)
		if err != nil {
			t.Fatal(err)
		}
		if len(maps) == 0 {
			t.Fatal("no read-only mapping of the executable in /proc/self/smaps")
		}
		for _, m := range maps {
			if m.end <= m.start {
				t.Fatalf("mapping %#x-%#x", m.start, m.end)
			}
			n += m.rss
		}
		return n
	}
	before := resident()
	dropped, err := dropExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	if dropped <= 0 || dropped > before {
		t.Fatalf("dropped %d bytes of %d resident", dropped, before)
	}
	sum := sha256.Sum256([]byte("abc"))
	if got := hex.EncodeToString(sum[:]); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("sha256 after the drop: %s", got)
	}
	if after := resident(); after >= before {
		t.Fatalf("resident %d bytes after the drop, %d before", after, before)
	}
}

// The executable's mappings are found by path when the inode differs (as
// on overlayfs, where they show the layer's inode), by inode when the path
// does, and not at all when neither matches.
func TestExecutableMappingsMatch(t *testing.T) {
	exe, err := selfExecutable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		exe  executable
		want bool
	}{
		{"both", exe, true},
		{"path only", executable{dev: exe.dev, ino: "0", path: exe.path}, true},
		{"inode only", executable{dev: exe.dev, ino: exe.ino, path: "/nonexistent"}, true},
		{"neither", executable{dev: exe.dev, ino: "0", path: "/nonexistent"}, false},
	} {
		maps, err := executableMappings(c.exe)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(maps) > 0; got != c.want {
			t.Errorf("%s: %d mappings found", c.name, len(maps))
		}
	}
}
