package filebased

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func TestStoreFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv")
	cfg := &Config{Filename: path, MaxEntries: 2}
	s := Open(cfg, logr.Discard(), nil)
	s.AddOrUpdate("a", "1")
	s.AddOrUpdate("bb", "22")
	s.AddOrUpdate("a", "333") // moves a last
	s.AddOrUpdate("c", "x")   // past max_entries: bb, the oldest, goes
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "1\na3\n3331\nc1\nx"; got != want {
		t.Errorf("file %q, want %q", got, want)
	}
	s.Remove("c")

	// An entry with an expiry, one expired, then a bad one: loaded up to
	// the fault.
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	contents := string(mustRead(t, path)) + "1\nk1\nvTTL" + strconv.Itoa(len(future)) + "\n" + future + "1\ne1\nvTTL1\n1" + "5\nbad"
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	Open(&Config{Filename: path}, logr.Discard(), nil).Iterate(func(k, v string) bool {
		got = append(got, k+"="+v)
		return true
	})
	if want := []string{"a=333", "k=v"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("loaded %v, want %v", got, want)
	}
}

// The file is written outside the store's lock, so two changes' writes
// can arrive out of order: the older snapshot must not replace the newer.
func TestOlderSnapshotNeverReplacesNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv")
	s := Open(&Config{Filename: path, FlushInterval: time.Hour}, logr.Discard(), nil)
	s.AddOrUpdate("a", "1")
	s.mu.Lock()
	older, olderN := s.snapshotLocked()
	s.put("b", "2", time.Time{})
	newer, newerN := s.snapshotLocked()
	s.mu.Unlock()
	s.write(newer, newerN)
	s.write(older, olderN)
	if got := string(mustRead(t, path)); got != newer {
		t.Errorf("file %q, want the newer snapshot %q", got, newer)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
