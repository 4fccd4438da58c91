package xds

import (
	"path/filepath"
)

// moveWatcher signals files moved into one directory. Envoy reloads a
// file subscription on a move only (inotify's IN_MOVED_TO): a move is
// atomic, where a file written or created in place may be read half
// written. Signals coalesce: however many moves happen while the
// subscription reloads, one more reload follows, and it reads the file as
// it is by then.
type moveWatcher struct {
	// moved has room for one pending signal; it is closed when the
	// watcher stops (Close, or a watch that cannot go on).
	moved chan struct{}
	// close releases the watch and waits for its reader to return.
	close func() error
}

// signal records a pending reload unless one is pending already.
func (w *moveWatcher) signal() {
	select {
	case w.moved <- struct{}{}:
	default:
	}
}

// follow reloads the file on each signal of w until Close.
func (s *FileSubscription) follow(w *moveWatcher) {
	defer close(s.done)
	defer func() { _ = w.close() }()
	for {
		select {
		case <-s.stop:
			return
		case _, ok := <-w.moved:
			if !ok {
				return
			}
		}
		s.refresh()
	}
}

// triggers reports whether a file moved into the watched directory under
// name calls for a reload: any file with a watched_directory (a
// Kubernetes ConfigMap swaps its ..data link), else the watched file's own
// name only.
func (s *FileSubscription) triggers(name string) bool {
	switch s.watch {
	case watchDirectory:
		return true
	case watchFile:
		return name == filepath.Base(s.path)
	default:
		return false
	}
}
