package logging

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// ErrUnknownLogger is returned for a logger name that is not a component.
// Its text is Envoy's /logging error message.
var ErrUnknownLogger = errors.New("unknown logger name")

// NamedLevel is one logger and its level, as /logging lists it.
type NamedLevel struct {
	Name  string
	Level Level
}

// Registry owns the proxy's loggers, their levels and the one sink they
// write through. It is safe for concurrent use.
type Registry struct {
	levels [len(componentNames)]atomic.Int32 // indexed like componentNames
	fine   *fineGrain                        // nil unless fine-grain mode
	sites  *siteCache
	// format is swapped once, by SetFormat, when the bootstrap's
	// application_log_config sets it after the registry exists.
	format atomic.Pointer[Formatter]
	escape bool
	now    func() time.Time

	outMu sync.Mutex // keeps each record's write whole
	out   io.Writer
	file  *FileWriter // nil when writing to stderr

	setMu sync.Mutex // serialises level changes, so a SetLevels is seen whole
}

// New builds a registry and opens its output. A bad format string, an
// unknown component, an invalid level or a file that cannot be opened is an
// error.
func New(cfg Config) (*Registry, error) {
	if !cfg.Level.valid() {
		return nil, fmt.Errorf("log level: invalid level %d", cfg.Level)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.ComponentLevels)) {
		l := cfg.ComponentLevels[name]
		if componentIndex(name) < 0 {
			return nil, fmt.Errorf("component log level: %w %q", ErrUnknownLogger, name)
		}
		if !l.valid() {
			return nil, fmt.Errorf("component log level %q: invalid level %d", name, l)
		}
	}
	pattern := cfg.Format
	if pattern == "" {
		pattern = DefaultFormat
	}
	f, err := CompileFormat(pattern)
	if err != nil {
		return nil, err
	}
	r := &Registry{escape: cfg.Escaped, now: cfg.Now}
	r.format.Store(f)
	if r.now == nil {
		r.now = time.Now
	}
	for i := range r.levels {
		r.levels[i].Store(int32(cfg.Level))
	}
	for name, l := range cfg.ComponentLevels {
		r.levels[componentIndex(name)].Store(int32(l))
	}
	if cfg.FineGrain {
		r.fine = newFineGrain(cfg.Level)
		r.sites = newSiteCache(r.fine.logger)
	} else {
		r.sites = newSiteCache(nil)
	}
	switch {
	case cfg.Path != "":
		fw, err := OpenFile(cfg.Path, cfg.FlushInterval, 0)
		if err != nil {
			return nil, fmt.Errorf("log path: %w", err)
		}
		r.file, r.out = fw, fw
	case cfg.Stderr != nil:
		r.out = cfg.Stderr
	default:
		r.out = os.Stderr
	}
	return r, nil
}

// SetFormat replaces the spdlog pattern of the records from now on (the
// bootstrap's application_log_config, read after the registry began
// logging). A bad pattern is an error and changes nothing.
func (r *Registry) SetFormat(pattern string) error {
	f, err := CompileFormat(pattern)
	if err != nil {
		return err
	}
	r.format.Store(f)
	return nil
}

// Logger returns the logger of a component. An unknown component is a
// programming error and panics. In fine-grain mode the component only
// starts the logger's name; its level and %n come from the source file of
// each call.
func (r *Registry) Logger(component string) logr.Logger {
	i := componentIndex(component)
	if i < 0 {
		panic(fmt.Sprintf("logging: unknown component logger %q", component))
	}
	s := &sink{reg: r, component: component, fullName: component}
	if r.fine == nil {
		s.level = &r.levels[i]
	}
	return logr.New(s)
}

// FineGrain reports whether loggers are source files.
func (r *Registry) FineGrain() bool { return r.fine != nil }

// Loggers lists the loggers and their levels: the components in listing
// order or, in fine-grain mode, the source files seen so far, sorted.
func (r *Registry) Loggers() []NamedLevel {
	if r.fine != nil {
		return r.fine.loggers()
	}
	out := make([]NamedLevel, len(componentNames))
	for i, name := range componentNames {
		out[i] = NamedLevel{Name: name, Level: Level(r.levels[i].Load())}
	}
	return out
}

// SetLevel sets one logger's level. Outside fine-grain mode an unknown
// component is ErrUnknownLogger; in fine-grain mode name is a glob over
// source files (see SetLevels) and is never unknown.
func (r *Registry) SetLevel(name string, l Level) error {
	return r.SetLevels(map[string]Level{name: l})
}

// SetLevels sets several loggers at once, all or nothing: an unknown name
// or an invalid level changes nothing.
//
// In fine-grain mode the names are globs ('*', '?'; a glob without '/'
// matches a file's base name or its stem, "server" for "server.go") and,
// as in Envoy, the call replaces the previous globs: files no glob matches
// return to the default level. When several globs match a file the
// longest wins.
func (r *Registry) SetLevels(levels map[string]Level) error {
	if len(levels) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(levels)) { // the same error every time
		l := levels[name]
		if !l.valid() {
			return fmt.Errorf("logger %q: invalid level %d", name, l)
		}
		if r.fine == nil && componentIndex(name) < 0 {
			return fmt.Errorf("%w %q", ErrUnknownLogger, name)
		}
	}
	r.setMu.Lock()
	defer r.setMu.Unlock()
	if r.fine != nil {
		r.fine.update(levels)
		return nil
	}
	for name, l := range levels {
		r.levels[componentIndex(name)].Store(int32(l))
	}
	return nil
}

// SetAll sets every logger, and the fine-grain default, to l. An invalid
// level is ignored.
func (r *Registry) SetAll(l Level) {
	if !l.valid() {
		return
	}
	r.setMu.Lock()
	defer r.setMu.Unlock()
	for i := range r.levels {
		r.levels[i].Store(int32(l))
	}
	if r.fine != nil {
		r.fine.setAll(l)
	}
}

// Reopen reopens the log file (SIGUSR1, /reopen_logs) so that a rotated
// file is replaced; it does nothing for stderr.
func (r *Registry) Reopen() error {
	if r.file == nil {
		return nil
	}
	return r.file.Reopen()
}

// Flush writes buffered records to the log file.
func (r *Registry) Flush() error {
	if r.file == nil {
		return nil
	}
	return r.file.Flush()
}

// Close flushes and closes the log file and stops its flush timer. Records
// logged afterwards are dropped; stderr is never closed.
func (r *Registry) Close() error {
	if r.file == nil {
		return nil
	}
	return r.file.Close()
}

// write formats one record and writes it whole. Formatting uses pooled
// buffers, so it allocates nothing per record.
func (r *Registry) write(name string, site *callSite, level Level, err error, msg string, values []byte, kvs []any) {
	f := r.format.Load()
	st := f.getState()
	st.rec = Record{Time: r.now(), Level: level, Name: name}
	if site != nil {
		st.rec.File, st.rec.Line, st.rec.Function = site.file, site.line, site.function
	}
	if f.needThread {
		st.rec.ThreadID = threadID()
	}
	st.msg = appendPayload(st.msg[:0], msg, err, values, kvs)
	st.out = f.render(st.out[:0], st)
	line := st.out
	if r.escape {
		st.esc = appendEscapedRecord(st.esc[:0], st.out)
		line = st.esc
	}
	r.outMu.Lock()
	// A logging call has no one to report a failed write to; FileWriter
	// keeps the error for the next Flush.
	_, _ = r.out.Write(line)
	r.outMu.Unlock()
	f.putState(st)
}
