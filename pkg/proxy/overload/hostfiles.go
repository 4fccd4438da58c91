package overload

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxHostFile bounds what a monitor reads of a /proc or cgroup file: the
// files it reads are a line or a few dozen, and a file that is not what it
// should be must not cost unbounded memory.
const maxHostFile = 64 << 10

// hostFiles reads the kernel's files (/proc, /sys/fs/cgroup) below root,
// the directory standing for "/": "" in production, a directory the test
// wrote in tests (Deps.HostRoot).
type hostFiles struct {
	root string
}

// path is the file's name below root.
func (h hostFiles) path(name string) string {
	if h.root == "" {
		return name
	}
	return filepath.Join(h.root, name)
}

// exists reports whether the file or directory exists.
func (h hostFiles) exists(name string) bool {
	_, err := os.Stat(h.path(name))
	return err == nil
}

// read returns the file's content, at most maxHostFile bytes of it.
func (h hostFiles) read(name string) (string, error) {
	f, err := os.Open(h.path(name))
	if err != nil {
		return "", fmt.Errorf("unable to read %s: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHostFile))
	if err != nil {
		return "", fmt.Errorf("unable to read %s: %w", name, err)
	}
	return string(b), nil
}
