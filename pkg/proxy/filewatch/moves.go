// Package filewatch follows files that are replaced by a move, as Envoy's
// filesystem watcher does: a file moved into a directory (inotify's
// IN_MOVED_TO) is complete, where one written in place may be read half
// written. xDS file subscriptions and the injected_resource overload
// monitor read their file again on each signal.
package filewatch

// Watcher signals files moved into one directory. Signals coalesce:
// however many moves happen while the reader is busy, one more signal
// follows, and the reader reads the file as it is by then.
type Watcher struct {
	// moved has room for one pending signal; it is closed when the
	// watcher stops (Close, or a watch that cannot go on).
	moved chan struct{}
	// close releases the watch and waits for its reader to return.
	close func() error
}

// Moved receives a value after one or more matching moves; it is closed
// when the watch ends.
func (w *Watcher) Moved() <-chan struct{} { return w.moved }

// Close releases the watch; Moved is closed once it returns.
func (w *Watcher) Close() error { return w.close() }

// signal records a pending signal unless one is pending already.
func (w *Watcher) signal() {
	select {
	case w.moved <- struct{}{}:
	default:
	}
}
