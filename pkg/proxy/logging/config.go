package logging

import (
	"io"
	"time"
)

// DefaultFormat is --log-format's default in the newer build: the
// timestamp, thread, level, logger, source location and message.
const DefaultFormat = "[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v"

// LegacyFormat is the older build's default, without the source location.
const LegacyFormat = "[%Y-%m-%d %T.%e][%t][%l][%n] %v"

// Config configures a Registry. The zero value logs at trace level to
// stderr with DefaultFormat.
type Config struct {
	// Level is the initial level of every logger (--log-level) and, in
	// fine-grain mode, the level of source files no glob matches.
	Level Level
	// ComponentLevels overrides Level for some components
	// (--component-log-level). Every name must satisfy IsComponent. They
	// have no effect in fine-grain mode, where loggers are source files.
	ComponentLevels map[string]Level
	// Format is the spdlog pattern of a record (--log-format); "" means
	// DefaultFormat.
	Format string
	// Escaped escapes C-style escape sequences in each record so that it
	// stays on one line (--log-format-escaped).
	Escaped bool
	// Path is the log file (--log-path); "" means Stderr.
	Path string
	// Stderr receives records when Path is ""; nil means os.Stderr. Writes
	// to it are unbuffered.
	Stderr io.Writer
	// FlushInterval is how often the log file's buffer is flushed
	// (--file-flush-interval-msec); 0 writes every record through at once.
	// It does not apply to Stderr.
	FlushInterval time.Duration
	// FineGrain names loggers by source file and lets /logging set their
	// levels by glob (--enable-fine-grain-logging).
	FineGrain bool
	// Now is the clock that stamps records; nil means time.Now.
	Now func() time.Time
}
