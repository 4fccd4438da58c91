package filewatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// Moves watches dir with inotify for IN_MOVED_TO, as Envoy does,
// and signals the moves whose file name passes accept; with modify, files
// written in place (IN_MODIFY: WatchedDirectory.watch_modify) signal too.
// A queue overflow (moves lost) signals as well: reading the file again is
// never wrong.
func Moves(dir string, modify bool, accept func(name string) bool, log logr.Logger) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, os.NewSyscallError("inotify_init1", err))
	}
	mask := uint32(unix.IN_MOVED_TO | unix.IN_ONLYDIR)
	if modify {
		mask |= unix.IN_MODIFY
	}
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", dir, os.NewSyscallError("inotify_add_watch", err))
	}
	// A non-blocking descriptor makes a pollable file: Read parks in the
	// runtime's poller, and Close wakes it.
	f := os.NewFile(uintptr(fd), "inotify")
	w := &Watcher{moved: make(chan struct{}, 1)}
	done := make(chan struct{})
	w.close = func() error {
		err := f.Close()
		<-done
		return err
	}
	go func() {
		defer close(done)
		defer close(w.moved)
		readMoves(f, w, accept, log, dir)
	}()
	return w, nil
}

// readMoves reads inotify events from f until it is closed or fails.
func readMoves(f *os.File, w *Watcher, accept func(string) bool, log logr.Logger, dir string) {
	// Room for many events at once: each is a header and a name of at
	// most NAME_MAX bytes plus its terminator.
	buf := make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				logging.Warning(log, "filesystem watch failed; the file is no longer followed", "path", dir, "error", err.Error())
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			// struct inotify_event: wd, mask, cookie, len (native
			// endian), then len bytes of NUL-padded name.
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			end := min(start+size, n)
			name := strings.TrimRight(string(buf[start:end]), "\x00")
			off = start + size
			switch {
			case mask&unix.IN_Q_OVERFLOW != 0:
				logging.Warning(log, "filesystem watch overflowed; reading the file again", "path", dir)
				w.signal()
			case mask&unix.IN_IGNORED != 0:
				logging.Warning(log, "watched directory removed; the file is no longer followed", "path", dir)
				return
			case mask&(unix.IN_MOVED_TO|unix.IN_MODIFY) != 0 && accept(name):
				w.signal()
			}
		}
	}
}
