package overload

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filewatch"
)

// injectedResource is envoy.resource_monitors.injected_resource: the
// pressure is a number in [0, 1] read from a file, which is replaced by a
// move (a rename or a symbolic link swap) to change it. As in Envoy, the
// file is read at the first update and again only after a move into its
// directory under its name; a file written in place keeps the pressure
// read before. Meant for tests that drive a proxy into overload.
type injectedResource struct {
	path string
	log  logr.Logger

	// mu guards the state below: Update runs on the refresh loop, Close
	// on the goroutine stopping the manager.
	mu      sync.Mutex
	watch   *filewatch.Watcher // set by the first Update
	closed  bool
	changed bool // the file must be read at the next update
	// pressure or err is the last reading's result.
	pressure float64
	err      error
}

// newInjectedResource checks that the file's directory can be watched
// (Envoy's watch fails at start when it is missing); the watch itself
// starts with the first update, so that building the manager starts
// nothing.
func newInjectedResource(path string, log logr.Logger) (*injectedResource, error) {
	if path == "" {
		return nil, errors.New("must be set")
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("the file's directory cannot be watched: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("the file's directory cannot be watched: %s is not a directory", dir)
	}
	return &injectedResource{path: path, log: log, changed: true}, nil
}

// Update implements Monitor; it reports at once.
func (m *injectedResource) Update(report func(float64, error)) {
	m.mu.Lock()
	if m.watch == nil && !m.closed {
		w, err := filewatch.Moves(filepath.Dir(m.path), false, m.isFile, m.log)
		if err != nil {
			m.mu.Unlock()
			report(0, err)
			return
		}
		m.watch = w
	}
	if m.watch != nil {
		select {
		case _, ok := <-m.watch.Moved():
			m.changed = m.changed || ok
		default:
		}
	}
	if m.changed {
		m.changed = false
		m.pressure, m.err = readPressure(m.path)
	}
	pressure, err := m.pressure, m.err
	m.mu.Unlock()
	report(pressure, err)
}

// isFile reports whether a file moved into the directory is the one read.
func (m *injectedResource) isFile(name string) bool { return name == filepath.Base(m.path) }

// Close ends the watch.
func (m *injectedResource) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.watch == nil {
		return nil
	}
	err := m.watch.Close()
	m.watch = nil
	return err
}

// readPressure reads the injected pressure: a decimal number between 0
// and 1, surrounding white space allowed; Envoy's messages for the rest.
func readPressure(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return 0, errors.New("failed to parse injected resource pressure")
	}
	if math.IsNaN(v) || v < 0 || v > 1 {
		return 0, errors.New("pressure out of range")
	}
	return v, nil
}
