// Package logging is the proxy's application logging: one Registry of
// component loggers with per-component levels (or, in fine-grain mode, one
// logger per source file), handed out as logr.Loggers, and one sink that
// formats records with spdlog's pattern flags (--log-format) and writes them
// to a file (--log-path) or to stderr.
//
// Level mapping. logr has no named levels, so the registry maps them:
// Info at V(0) is info, V(1) is debug, V(2) and beyond are trace, Error is
// error. Warning and Critical are helpers that travel on logr's Error path
// with a reserved key the sink strips, because logr asks the sink whether a
// level is enabled before Info but never before Error, and a warning must
// still be written when the threshold is "warning".
//
// Cost. Checking a disabled level is one atomic load in component mode, so
// a disabled debug log on a hot path costs a few nanoseconds. Key/value
// arguments are still boxed into logr's variadic slice before the check;
// guard expensive arguments with Logger.Enabled. In fine-grain mode every
// check also reads the caller's program counter (a runtime.Callers call).
//
// Files. FileWriter is the buffered, periodically flushed, reopenable file
// the registry writes to; access logs reuse it.
package logging
