package xds

import (
	"path/filepath"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filewatch"
)

// follow reloads the file on each signal of w until Close.
func (s *FileSubscription) follow(w *filewatch.Watcher) {
	defer close(s.done)
	defer func() { _ = w.Close() }()
	for {
		select {
		case <-s.stop:
			return
		case _, ok := <-w.Moved():
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
