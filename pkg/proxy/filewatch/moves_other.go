//go:build !linux

package filewatch

import (
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// Moves watches dir with fsnotify where inotify is not available
// (development machines): fsnotify reports a move into the directory as
// Create, and cannot tell it from a file created in place, so both reload
// here. With modify, files written in place (Write) signal too.
func Moves(dir string, modify bool, accept func(name string) bool, log logr.Logger) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if err := fw.Add(dir); err != nil {
		_ = fw.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	w := &Watcher{moved: make(chan struct{}, 1)}
	done := make(chan struct{})
	w.close = func() error {
		err := fw.Close()
		<-done
		return err
	}
	go func() {
		defer close(done)
		defer close(w.moved)
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if (ev.Has(fsnotify.Create) || modify && ev.Has(fsnotify.Write)) && accept(filepath.Base(ev.Name)) {
					w.signal()
				}
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				logging.Warning(log, "filesystem watch error; reading the file again", "path", dir, "error", err.Error())
				w.signal()
			}
		}
	}()
	return w, nil
}
