package xds

import (
	"github.com/go-logr/logr"
)

// DirWatch signals changes in one directory the way Envoy's filesystem
// watcher does for secrets' files: a file moved into it (the kubelet
// swapping a mounted Secret's ..data link), and with modify a file
// written in place too. Signals coalesce: however many changes happen
// while the receiver works, one more signal follows.
type DirWatch struct{ w *moveWatcher }

// WatchDirectory starts watching dir. log receives the watch's own
// failures (a removed directory, a queue overflow).
func WatchDirectory(dir string, modify bool, log logr.Logger) (*DirWatch, error) {
	w, err := newMoveWatcher(dir, modify, func(string) bool { return true }, log)
	if err != nil {
		return nil, err
	}
	return &DirWatch{w: w}, nil
}

// Changed receives a value after each change; it is closed once the watch
// ends (Close, or a watch that cannot go on).
func (d *DirWatch) Changed() <-chan struct{} { return d.w.moved }

// Close stops the watch and waits for its reader to return.
func (d *DirWatch) Close() error { return d.w.close() }
