package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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

// After the drop the executable's read-only mappings read no more than the
// page a fault asks for (MADV_RANDOM), and the page cache no longer holds
// the executable's pages that no process maps, so a fault's neighbours are
// not mapped with it.
func TestDropExecutablePagesFaultsByPage(t *testing.T) {
	exe, err := selfExecutable()
	if err != nil {
		t.Fatal(err)
	}
	// Read the whole file, so that the page cache holds all of it.
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		t.Fatal(err)
	}
	before := cachedPages(t, f)
	if _, err := dropExecutablePages(); err != nil {
		t.Fatal(err)
	}
	after := cachedPages(t, f)
	if after >= before {
		t.Fatalf("%d of the executable's pages cached after the drop, %d before", after, before)
	}
	maps, err := executableMappings(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if !m.random {
			t.Errorf("mapping %#x-%#x is not advised MADV_RANDOM", m.start, m.end)
		}
	}
	sum := sha256.Sum256([]byte("abc"))
	if got := hex.EncodeToString(sum[:]); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("sha256 after the drop: %s", got)
	}
}

// cachedPages counts the pages of f that the page cache holds (mincore on
// a mapping of the whole file, which maps nothing in by itself).
func cachedPages(t *testing.T, f *os.File) int {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
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
