package logging

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// DefaultMinFlushBytes is the buffer size past which a FileWriter flushes
// without waiting for its interval (Envoy's access-log default).
const DefaultMinFlushBytes = 64 << 10

// FileWriter is a buffered log file: writes collect in memory and reach the
// file when the buffer passes a size or when the flush interval elapses,
// whichever comes first. Reopen replaces the file after it was renamed
// (logrotate). It is safe for concurrent use, and each Write reaches the
// file whole, never interleaved with another.
type FileWriter struct {
	path     string
	interval time.Duration
	minFlush int
	// stream is a standard stream: never reopened nor closed.
	stream bool

	mu     sync.Mutex
	file   *os.File
	buf    []byte
	err    error // a failed background flush, reported by the next Flush
	closed bool

	stop chan struct{} // closed by Close to end the flush loop
	done chan struct{} // closed when the flush loop has ended
}

// OpenFile opens (creating, appending) a log file. flushInterval 0 writes
// every Write through at once; minFlushBytes 0 means DefaultMinFlushBytes.
// Negative values are errors.
func OpenFile(path string, flushInterval time.Duration, minFlushBytes int) (*FileWriter, error) {
	switch {
	case path == "":
		return nil, errors.New("open log file: empty path")
	case flushInterval < 0:
		return nil, fmt.Errorf("open log file %s: negative flush interval %v", path, flushInterval)
	case minFlushBytes < 0:
		return nil, fmt.Errorf("open log file %s: negative flush size %d", path, minFlushBytes)
	case minFlushBytes == 0:
		minFlushBytes = DefaultMinFlushBytes
	}
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	w := &FileWriter{path: path, interval: flushInterval, minFlush: minFlushBytes, file: f}
	if flushInterval > 0 {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		go w.flushLoop()
	}
	return w, nil
}

// OpenStream returns a writer buffering lines for one of the process's
// standard streams, flushed as OpenFile's are. name ("/dev/stdout") only
// labels errors. Reopen only flushes it, and Close flushes without closing
// the stream, which the process owns.
func OpenStream(name string, f *os.File, flushInterval time.Duration, minFlushBytes int) (*FileWriter, error) {
	switch {
	case flushInterval < 0:
		return nil, fmt.Errorf("open %s: negative flush interval %v", name, flushInterval)
	case minFlushBytes < 0:
		return nil, fmt.Errorf("open %s: negative flush size %d", name, minFlushBytes)
	case minFlushBytes == 0:
		minFlushBytes = DefaultMinFlushBytes
	}
	w := &FileWriter{path: name, interval: flushInterval, minFlush: minFlushBytes, file: f, stream: true}
	if flushInterval > 0 {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		go w.flushLoop()
	}
	return w, nil
}

func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	return f, nil
}

// Path returns the file's path.
func (w *FileWriter) Path() string { return w.path }

// Write buffers p (or, with no flush interval, writes it through). It
// returns an error, and 0, when p was lost: the writer is closed or a flush
// failed (the buffer is then dropped, so a full disk cannot grow memory).
func (w *FileWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, fmt.Errorf("write log file %s: %w", w.path, os.ErrClosed)
	}
	w.buf = append(w.buf, p...)
	if w.interval > 0 && len(w.buf) <= w.minFlush {
		// The common case, once per access-log line: unlocked without
		// a deferred call.
		w.mu.Unlock()
		return len(p), nil
	}
	defer w.mu.Unlock()
	if err := w.flushLocked(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the buffer to the file. It also reports a failure of a
// background flush since the previous Flush.
func (w *FileWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("flush log file %s: %w", w.path, os.ErrClosed)
	}
	return w.flushAndReport()
}

// Reopen flushes the buffer to the current file, then opens the path again,
// so that writes go to a new file after the old one was renamed. If the
// path cannot be opened, writing continues to the old file.
func (w *FileWriter) Reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("reopen log file %s: %w", w.path, os.ErrClosed)
	}
	flushErr := w.flushAndReport()
	if w.stream {
		return flushErr
	}
	f, err := openAppend(w.path)
	if err != nil {
		return errors.Join(flushErr, fmt.Errorf("reopen: %w", err))
	}
	closeErr := w.file.Close()
	w.file = f
	if closeErr != nil {
		closeErr = fmt.Errorf("reopen log file %s: close previous file: %w", w.path, closeErr)
	}
	return errors.Join(flushErr, closeErr)
}

// Close flushes, stops the flush timer and closes the file. Closing again
// does nothing.
func (w *FileWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	flushErr := w.flushAndReport()
	var closeErr error
	if !w.stream {
		closeErr = w.file.Close()
	}
	w.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
	if closeErr != nil {
		closeErr = fmt.Errorf("close log file %s: %w", w.path, closeErr)
	}
	return errors.Join(flushErr, closeErr)
}

// flushLoop flushes every interval until Close.
func (w *FileWriter) flushLoop() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if err := w.flushLocked(); err != nil && w.err == nil {
				w.err = err
			}
			w.mu.Unlock()
		}
	}
}

// flushAndReport flushes and returns that error or, failing that, the
// pending background one; w.mu must be held.
func (w *FileWriter) flushAndReport() error {
	err := w.flushLocked()
	if err == nil {
		err = w.err
	}
	w.err = nil
	return err
}

// flushLocked writes the buffer out; w.mu must be held. On failure the
// buffer is dropped.
func (w *FileWriter) flushLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.file.Write(w.buf)
	if cap(w.buf) > 4*w.minFlush {
		w.buf = nil // one huge write must not pin its memory
	} else {
		w.buf = w.buf[:0]
	}
	if err != nil {
		return fmt.Errorf("write log file %s: %w", w.path, err)
	}
	return nil
}
