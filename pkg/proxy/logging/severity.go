package logging

import "github.com/go-logr/logr"

// severityKey is the reserved key that carries a warning or critical level
// through logr's Error path. It is unexported, so no caller's key can
// collide with it.
type severityKey struct{}

// Warning logs msg at warning level. logr has no warning level, and its
// Info path is filtered by Enabled before the sink sees the record, so the
// record travels on the Error path (which logr never filters) with a
// reserved key the sink recognises and strips.
func Warning(l logr.Logger, msg string, kv ...any) { logAt(l, LevelWarning, msg, kv) }

// Critical logs msg at critical level; see Warning.
func Critical(l logr.Logger, msg string, kv ...any) { logAt(l, LevelCritical, msg, kv) }

func logAt(l logr.Logger, level Level, msg string, kv []any) {
	args := make([]any, 0, len(kv)+2)
	args = append(args, severityKey{}, level)
	args = append(args, kv...)
	// Two frames, Warning (or Critical) and logAt, sit between the caller
	// and logr.
	l.WithCallDepth(2).Error(nil, msg, args...)
}

// severityOf extracts the level Warning or Critical put in front of kvs.
func severityOf(kvs []any) (Level, []any, bool) {
	if len(kvs) < 2 {
		return 0, kvs, false
	}
	if _, ok := kvs[0].(severityKey); !ok {
		return 0, kvs, false
	}
	level, ok := kvs[1].(Level)
	if !ok || !level.valid() {
		return 0, kvs, false
	}
	return level, kvs[2:], true
}
