package logging

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func openTestFile(t *testing.T, interval time.Duration, minFlush int) (*FileWriter, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "access.log")
	w, err := OpenFile(path, interval, minFlush)
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	return w, path
}

func mustWrite(t *testing.T, w *FileWriter, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func TestFileWriterFlushesOnSize(t *testing.T) {
	w, path := openTestFile(t, time.Hour, 16)
	defer w.Close()
	mustWrite(t, w, "0123456789")
	assertFile(t, path, "") // 10 bytes: buffered
	mustWrite(t, w, "abcdef")
	assertFile(t, path, "") // exactly 16 bytes: still buffered
	mustWrite(t, w, "!")
	assertFile(t, path, "0123456789abcdef!") // past 16 bytes: flushed
}

func TestFileWriterFlushesOnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, path := openTestFile(t, 10*time.Second, 0)
		mustWrite(t, w, "first\n")
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		assertFile(t, path, "") // not yet
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assertFile(t, path, "first\n")
		mustWrite(t, w, "second\n")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assertFile(t, path, "first\nsecond\n")
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
}

func TestFileWriterWithoutIntervalWritesThrough(t *testing.T) {
	w, path := openTestFile(t, 0, 0)
	defer w.Close()
	mustWrite(t, w, "now\n")
	assertFile(t, path, "now\n")
}

func TestFileWriterFlushAndClose(t *testing.T) {
	w, path := openTestFile(t, time.Hour, 0)
	mustWrite(t, w, "a\n")
	if err := w.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	assertFile(t, path, "a\n")
	mustWrite(t, w, "b\n")
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertFile(t, path, "a\nb\n")
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for name, call := range map[string]func() error{
		"Write":  func() error { _, err := w.Write([]byte("late")); return err },
		"Flush":  w.Flush,
		"Reopen": w.Reopen,
	} {
		if err := call(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s after Close = %v, want os.ErrClosed", name, err)
		}
	}
	assertFile(t, path, "a\nb\n")
}

func TestFileWriterAppendsToAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := OpenFile(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, "new\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "old\nnew\n")
}

// TestFileWriterReopenAfterRename is logrotate's "create" mode: the file is
// renamed, then the writer is told to reopen.
func TestFileWriterReopenAfterRename(t *testing.T) {
	w, path := openTestFile(t, time.Hour, 0)
	defer w.Close()
	mustWrite(t, w, "before rename\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, "before reopen\n")
	if err := w.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	mustWrite(t, w, "after reopen\n")
	if err := w.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	assertFile(t, path+".1", "before rename\nbefore reopen\n")
	assertFile(t, path, "after reopen\n")
}

func TestFileWriterReopenFailureKeepsTheOldFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.log")
	w, err := OpenFile(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Reopen with the directory gone = %v, want os.ErrNotExist", err)
	}
	mustWrite(t, w, "still written\n")
	assertFile(t, filepath.Join(moved, "x.log"), "still written\n")
}

func TestOpenFileErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		path     string
		interval time.Duration
		minFlush int
		text     string
	}{
		"empty path":        {path: "", text: "empty path"},
		"missing directory": {path: filepath.Join(dir, "no", "x.log"), text: "no such file"},
		"a directory":       {path: dir, text: "is a directory"},
		"negative interval": {path: filepath.Join(dir, "a.log"), interval: -time.Second, text: "negative flush interval"},
		"negative size":     {path: filepath.Join(dir, "b.log"), minFlush: -1, text: "negative flush size"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w, err := OpenFile(tc.path, tc.interval, tc.minFlush)
			if err == nil {
				w.Close()
				t.Fatal("OpenFile succeeded")
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not mention %q", err, tc.text)
			}
		})
	}
}

// TestFileWriterConcurrentWriters checks, under -race too, that writes from
// many goroutines each reach the file whole.
func TestFileWriterConcurrentWriters(t *testing.T) {
	const writers, perWriter = 8, 250
	w, path := openTestFile(t, time.Millisecond, 512)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				line := fmt.Sprintf("writer=%d record=%d %s\n", g, i, strings.Repeat("x", 40))
				if _, err := w.Write([]byte(line)); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // a reopen in the middle must not lose or split records
		defer wg.Done()
		if err := w.Reopen(); err != nil {
			t.Errorf("Reopen: %v", err)
		}
	}()
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(got) != writers*perWriter {
		t.Fatalf("%d lines, want %d", len(got), writers*perWriter)
	}
	seen := map[[2]int]bool{}
	for _, line := range got {
		var g, i int
		var tail string
		if _, err := fmt.Sscanf(line, "writer=%d record=%d %s", &g, &i, &tail); err != nil || tail != strings.Repeat("x", 40) {
			t.Fatalf("split or mangled line %q", line)
		}
		seen[[2]int{g, i}] = true
	}
	if len(seen) != writers*perWriter {
		t.Errorf("%d distinct records, want %d", len(seen), writers*perWriter)
	}
}

func TestStreamWriterIsNeverReopenedNorClosed(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fw, err := OpenStream("/dev/stdout", w, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	// Reopen flushes what is buffered and keeps the stream.
	if err := fw.Reopen(); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	// The stream is still open: the process owns it.
	if _, err := w.Write([]byte("three\n")); err != nil {
		t.Fatalf("the stream was closed: %v", err)
	}
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(r, buf, len("one\ntwo\nthree\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:n]); got != "one\ntwo\nthree\n" {
		t.Errorf("stream got %q", got)
	}
	if _, err := OpenStream("/dev/stdout", w, -time.Second, 0); err == nil {
		t.Error("a negative flush interval was accepted")
	}
}
