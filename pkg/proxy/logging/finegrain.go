package logging

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// fileLogger is one source file's logger in fine-grain mode.
type fileLogger struct {
	name  string // the file path, as %g prints it
	level atomic.Int32
}

// fineGrain holds the per-file loggers of --enable-fine-grain-logging and
// the glob rules that set their levels, like Envoy's FineGrainLogContext.
type fineGrain struct {
	def atomic.Int32 // level of files no rule matches

	mu    sync.Mutex // guards rules and files
	rules []globRule // first match wins
	files map[string]*fileLogger
}

func newFineGrain(def Level) *fineGrain {
	fg := &fineGrain{files: map[string]*fileLogger{}}
	fg.def.Store(int32(def))
	return fg
}

// logger returns the logger of a file, creating it with the level the
// current rules give it. The site cache calls it once per new call site.
func (fg *fineGrain) logger(file string) *fileLogger {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	if l, ok := fg.files[file]; ok {
		return l
	}
	l := &fileLogger{name: file}
	l.level.Store(int32(fg.levelOf(file)))
	fg.files[file] = l
	return l
}

// levelOf is the level the rules give a file; fg.mu must be held.
func (fg *fineGrain) levelOf(file string) Level {
	for _, r := range fg.rules {
		if r.matches(file) {
			return r.level
		}
	}
	return Level(fg.def.Load())
}

// update replaces the rules with globs and re-levels every known file, as
// Envoy's updateVerbositySetting does: each /logging call states the whole
// fine-grain setting, and files no glob matches return to the default.
// Within one call the longest glob wins (the map has no order); ties go to
// the lexically first.
func (fg *fineGrain) update(globs map[string]Level) {
	rules := make([]globRule, 0, len(globs))
	for p, l := range globs {
		rules = append(rules, globRule{pattern: p, isPath: strings.Contains(p, "/"), level: l})
	}
	slices.SortFunc(rules, func(a, b globRule) int {
		if c := cmp.Compare(len(b.pattern), len(a.pattern)); c != 0 {
			return c
		}
		return cmp.Compare(a.pattern, b.pattern)
	})
	fg.mu.Lock()
	defer fg.mu.Unlock()
	fg.rules = rules
	for name, l := range fg.files {
		l.level.Store(int32(fg.levelOf(name)))
	}
}

// setAll sets the default and every file to level and drops the rules.
func (fg *fineGrain) setAll(level Level) {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	fg.def.Store(int32(level))
	fg.rules = nil
	for _, l := range fg.files {
		l.level.Store(int32(level))
	}
}

// loggers lists the files seen so far, sorted by path.
func (fg *fineGrain) loggers() []NamedLevel {
	fg.mu.Lock()
	out := make([]NamedLevel, 0, len(fg.files))
	for name, l := range fg.files {
		out = append(out, NamedLevel{Name: name, Level: Level(l.level.Load())})
	}
	fg.mu.Unlock()
	slices.SortFunc(out, func(a, b NamedLevel) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
