package xds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filewatch"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// FileSubscription follows a DiscoveryResponse file, like Envoy's
// FilesystemSubscriptionImpl: Start reads it once, then a watch re-reads
// it whenever a file is moved into place, and each read that decodes is
// handed to the apply function. Files written in place are not noticed
// (as in Envoy): a half-written file must never be read, so updates are
// made by writing a new file and renaming it over the old one.
type FileSubscription struct {
	path  string
	dir   string // the watched directory
	watch watchMode
	// modify is WatchedDirectory.watch_modify: files written in place in
	// the watched directory reload too.
	modify bool
	dec    decoder
	apply  func(Update) error
	stats  subscriptionStats
	log    logr.Logger
	now    func() time.Time

	unknownPolicy  UnknownPolicy
	unknownCounter *stats.Counter
	// warned holds the unknown-field paths already warned about; only the
	// refresh path, which never runs concurrently, touches it.
	warned map[string]bool

	// stop is closed by Close; done is closed when the watch goroutine
	// (or a Start that failed) is over.
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// ready is closed once the first read is over, accepted or not (the
	// init target of Envoy's filesystem subscription).
	ready chan struct{}

	mu          sync.Mutex
	started     bool
	version     string
	lastUpdated time.Time
}

// watchMode says which events in the watched directory trigger a reload.
type watchMode int

const (
	// watchFile reloads when a file is moved to the path's name.
	watchFile watchMode = iota
	// watchDirectory reloads when any file is moved into the directory.
	watchDirectory
)

// NewFileSubscription prepares a subscription to the file o.Path; nothing
// is read before Start. apply is called with each update that decodes,
// never concurrently with itself; an error it returns rejects the update
// (counted in update_rejected and logged), and the caller keeps whatever
// it had applied before. The subscription stats are created at once, so
// they are listed at zero from the start.
//
// Errors name the problem, not the configuration field: the caller knows
// which field the path came from. A path that does not exist gets Envoy's
// message, "paths must refer to an existing path in the system: '<path>'
// does not exist".
func NewFileSubscription(o FileOptions, apply func(Update) error) (*FileSubscription, error) {
	switch {
	case o.Path == "":
		return nil, errors.New("a path is required")
	case o.TypeURL == "":
		return nil, errors.New("a resource type URL is required")
	case o.Stats == (stats.Scope{}):
		return nil, errors.New("a stats scope is required")
	case apply == nil:
		return nil, errors.New("an apply function is required")
	}
	dec, err := newDecoder(o.TypeURL)
	if err != nil {
		return nil, err
	}
	if err := checkExists(o.Path, false); err != nil {
		return nil, err
	}
	s := &FileSubscription{
		path:           o.Path,
		dir:            filepath.Dir(o.Path),
		dec:            dec,
		apply:          apply,
		log:            o.Log,
		now:            o.Now,
		unknownPolicy:  o.Unknown,
		unknownCounter: o.UnknownCounter,
		warned:         map[string]bool{},
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
		ready:          make(chan struct{}),
	}
	if o.WatchedDirectory != "" {
		if err := checkExists(o.WatchedDirectory, true); err != nil {
			return nil, &WatchedDirectoryError{Err: err}
		}
		s.dir, s.watch, s.modify = o.WatchedDirectory, watchDirectory, o.WatchModify
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.stats = newSubscriptionStats(o.Stats)
	return s, nil
}

// WatchedDirectoryError is NewFileSubscription's error about
// FileOptions.WatchedDirectory, so that the caller can name that field
// rather than the file's.
type WatchedDirectoryError struct{ Err error }

func (e *WatchedDirectoryError) Error() string { return e.Err.Error() }
func (e *WatchedDirectoryError) Unwrap() error { return e.Err }

// checkExists fails, with Envoy's message, if path does not exist, and if
// it is not a directory when dir is set.
func checkExists(path string, dir bool) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("paths must refer to an existing path in the system: '%s' does not exist", path)
	case err != nil:
		return fmt.Errorf("'%s' cannot be used: %w", path, err)
	case dir && !fi.IsDir():
		return fmt.Errorf("'%s' is not a directory", path)
	}
	return nil
}

// Start sets up the watch, reads the file once (the initial fetch), and
// then follows the file in a goroutine until Close. As in Envoy, a failed
// initial fetch is counted and logged, not returned: the server starts
// without these resources and picks them up when a good file is moved into
// place. Start returns an error only if the watch cannot be set up, or if
// it was already called, or Close was.
func (s *FileSubscription) Start() error {
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		return errors.New("the subscription is closed")
	default:
	}
	if s.started {
		s.mu.Unlock()
		return errors.New("the subscription is already started")
	}
	s.started = true
	s.mu.Unlock()
	w, err := filewatch.Moves(s.dir, s.modify, s.triggers, s.log)
	if err != nil {
		close(s.done)
		return err
	}
	// The watch is set up before the first read, so a file moved into
	// place while it is read is read again.
	s.refresh()
	close(s.ready)
	go s.follow(w)
	return nil
}

// Ready is closed once Start has read the file the first time, whether
// the update was accepted or not: the server waits for it as Envoy's init
// manager waits for a filesystem subscription's first refresh.
func (s *FileSubscription) Ready() <-chan struct{} { return s.ready }

// Close stops following the file and waits for the watch goroutine, so
// apply is not running and will not run once Close returns. It is
// idempotent and safe before Start.
func (s *FileSubscription) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.done
	}
	return nil
}

// Version returns the version_info of the last accepted update, or "".
func (s *FileSubscription) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// LastUpdated returns when the last update was accepted, or the zero time.
func (s *FileSubscription) LastUpdated() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUpdated
}
