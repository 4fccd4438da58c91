// Package filebased is Envoy's file-based key-value store
// (envoy.key_value.file_based): entries kept in memory in insertion order
// (an update moves an entry last; past max_entries the oldest goes), read
// from a file when the store is made and written back to it every
// flush_interval, or at each change without one. The file is Envoy's:
// each key and value as its length in decimal, a newline, then its bytes;
// a value may be followed by "TTL", the length of its expiry and the
// expiry itself (seconds since the epoch), which this store reads (an
// expired entry is skipped) and never writes. The dynamic forward proxy's
// DNS cache keeps its resolutions in one (key_value_config).
package filebased

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	filebasedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/key_value/file_based/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
)

// Name is the extension's name in the proxy. spelling; Category its
// extension category.
const (
	Name     = "proxy.key_value.file_based"
	Category = "envoy.common.key_value"
)

// defaultMaxEntries is max_entries' default.
const defaultMaxEntries = 1000

// ttlMarker introduces an entry's expiry in the file.
const ttlMarker = "TTL"

// Config is a checked FileBasedKeyValueStoreConfig.
type Config struct {
	Filename string
	// FlushInterval is how often the store is written; 0 writes it at
	// each change.
	FlushInterval time.Duration
	// MaxEntries bounds the entries, 0 for no bound.
	MaxEntries int
}

// Factory compiles the extension's configuration.
type Factory struct{}

// Compile checks a FileBasedKeyValueStoreConfig. Errors name the field.
func (Factory) Compile(m proto.Message) (*Config, error) {
	c, ok := m.(*filebasedv3.FileBasedKeyValueStoreConfig)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&filebasedv3.FileBasedKeyValueStoreConfig{}), m)
	}
	cfg := &Config{Filename: c.GetFilename(), MaxEntries: defaultMaxEntries}
	if cfg.Filename == "" {
		return nil, errors.New("filename: required")
	}
	if d := c.GetFlushInterval(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			return nil, errors.New("flush_interval: must be a duration of 0 or more")
		}
		cfg.FlushInterval = d.AsDuration().Truncate(time.Millisecond)
	}
	if n := c.GetMaxEntries(); n != nil {
		cfg.MaxEntries = int(n.GetValue())
	}
	return cfg, nil
}

// Store is one store. Its methods are safe for concurrent use.
type Store struct {
	cfg *Config
	log logr.Logger
	now func() time.Time

	mu      sync.Mutex
	order   *list.List // of *entry, oldest first
	byKey   map[string]*list.Element
	timer   *time.Timer
	stopped bool
	// taken counts the snapshots of the entries taken for the file.
	taken uint64

	// writeMu orders the file writes, which happen outside mu so that a
	// slow disk never holds up the cache's lookups; written is the
	// snapshot the file holds, so an older one never replaces a newer.
	writeMu sync.Mutex
	written uint64
}

type entry struct {
	key, value string
	// expiry is a loaded entry's TTL, zero for none.
	expiry time.Time
}

// Open makes the store of cfg and reads its file, if there is one; a
// file that does not parse is logged, and the entries read before the
// fault are kept, as Envoy does. now is the clock (nil: time.Now).
func Open(cfg *Config, log logr.Logger, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	s := &Store{cfg: cfg, log: log, now: now, order: list.New(), byKey: map[string]*list.Element{}}
	b, err := os.ReadFile(cfg.Filename)
	switch {
	case errors.Is(err, os.ErrNotExist):
		log.Info("File for key value store does not yet exist: " + cfg.Filename)
	case err != nil:
		log.Error(err, "Failed to read key value store file "+cfg.Filename)
	default:
		if err := s.parse(string(b)); err != nil {
			log.Info("Failed to parse key value store file "+cfg.Filename, "error", err.Error())
		}
	}
	return s
}

// parse loads the file's entries.
func (s *Store) parse(contents string) error {
	for contents != "" {
		key, rest, err := token(contents)
		if err != nil {
			return err
		}
		value, rest, err := token(rest)
		if err != nil {
			return err
		}
		contents = rest
		var expiry time.Time
		if after, ok := strings.CutPrefix(contents, ttlMarker); ok {
			t, rest, err := token(after)
			if err != nil {
				return fmt.Errorf("failed to read TTL token: %w", err)
			}
			secs, err := strconv.ParseInt(t, 10, 64)
			if err != nil {
				return errors.New("TTL was read from disk but failed to convert to integer")
			}
			contents = rest
			expiry = time.Unix(secs, 0)
			if !expiry.After(s.now()) {
				continue
			}
		}
		s.put(key, value, expiry)
	}
	return nil
}

// token takes a length-prefixed token off the front of contents, with
// Envoy's messages for a bad file (lower-cased, as Go errors are).
func token(contents string) (string, string, error) {
	nl := strings.IndexByte(contents, '\n')
	if nl < 0 {
		return "", "", errors.New("bad file: no newline")
	}
	n, err := strconv.ParseUint(contents[:nl], 10, 64)
	if err != nil {
		return "", "", errors.New("bad file: no length")
	}
	contents = contents[nl+1:]
	if uint64(len(contents)) < n {
		return "", "", errors.New("bad file: insufficient contents")
	}
	return contents[:n], contents[n:], nil
}

// put adds or replaces key, last in order, dropping the oldest past
// max_entries. s.mu is held (or the store is not shared yet).
func (s *Store) put(key, value string, expiry time.Time) {
	if el, ok := s.byKey[key]; ok {
		s.order.Remove(el)
	}
	s.byKey[key] = s.order.PushBack(&entry{key: key, value: value, expiry: expiry})
	if s.cfg.MaxEntries > 0 && s.order.Len() > s.cfg.MaxEntries {
		oldest := s.order.Front()
		s.order.Remove(oldest)
		delete(s.byKey, oldest.Value.(*entry).key)
	}
}

// Start writes the file every flush_interval from now on (with one, else
// each change writes it).
func (s *Store) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.FlushInterval <= 0 || s.timer != nil || s.stopped {
		return
	}
	s.timer = time.AfterFunc(s.cfg.FlushInterval, s.tick)
}

// tick flushes and runs again after the interval.
func (s *Store) tick() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	contents, n := s.snapshotLocked()
	s.timer = time.AfterFunc(s.cfg.FlushInterval, s.tick)
	s.mu.Unlock()
	s.write(contents, n)
}

// Stop ends the flushes; the file keeps what the last one wrote, as when
// Envoy stops.
func (s *Store) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// AddOrUpdate sets key's value.
func (s *Store) AddOrUpdate(key, value string) {
	s.mu.Lock()
	s.put(key, value, time.Time{})
	s.changedAndUnlock()
}

// Remove deletes key.
func (s *Store) Remove(key string) {
	s.mu.Lock()
	el, ok := s.byKey[key]
	if !ok {
		s.mu.Unlock()
		return
	}
	s.order.Remove(el)
	delete(s.byKey, key)
	s.changedAndUnlock()
}

// changedAndUnlock releases s.mu, writing the file first when there is
// no flush interval (the write itself happens after the unlock).
func (s *Store) changedAndUnlock() {
	if s.cfg.FlushInterval > 0 || s.stopped {
		s.mu.Unlock()
		return
	}
	contents, n := s.snapshotLocked()
	s.mu.Unlock()
	s.write(contents, n)
}

// Iterate calls fn with each entry in order until it returns false.
func (s *Store) Iterate(fn func(key, value string) bool) {
	s.mu.Lock()
	entries := make([]entry, 0, s.order.Len())
	for el := s.order.Front(); el != nil; el = el.Next() {
		entries = append(entries, *el.Value.(*entry))
	}
	s.mu.Unlock()
	for _, e := range entries {
		if !fn(e.key, e.value) {
			return
		}
	}
}

// snapshotLocked renders the entries in the file's format and numbers
// the snapshot. s.mu is held.
func (s *Store) snapshotLocked() (string, uint64) {
	var b strings.Builder
	for el := s.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		b.WriteString(strconv.Itoa(len(e.key)))
		b.WriteByte('\n')
		b.WriteString(e.key)
		b.WriteString(strconv.Itoa(len(e.value)))
		b.WriteByte('\n')
		b.WriteString(e.value)
	}
	s.taken++
	return b.String(), s.taken
}

// write replaces the file with snapshot n's contents (a temporary file
// renamed over it, so that a reader never sees half), unless a newer
// snapshot has been written already.
func (s *Store) write(contents string, n uint64) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if n <= s.written {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.cfg.Filename), "."+filepath.Base(s.cfg.Filename)+".*")
	if err == nil {
		_, err = tmp.WriteString(contents)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), s.cfg.Filename)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}
	if err != nil {
		s.log.Error(err, "Failed to flush cache to file "+s.cfg.Filename)
		return
	}
	s.written = n
}
