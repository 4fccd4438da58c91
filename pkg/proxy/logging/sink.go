package logging

import (
	"sync/atomic"

	"github.com/go-logr/logr"
)

// sink is the logr.LogSink behind every Logger of a Registry.
type sink struct {
	reg *Registry
	// level is the component's level; nil in fine-grain mode, where the
	// level belongs to the call site's source file.
	level     *atomic.Int32
	component string
	names     string // WithName segments, each after a '.'
	fullName  string // component + names: %n outside fine-grain mode
	values    []byte // WithValues pairs, rendered once
	callDepth int    // frames between the user's call and the sink's method
}

var (
	_ logr.LogSink          = (*sink)(nil)
	_ logr.CallDepthLogSink = (*sink)(nil)
)

// Init records how many frames logr adds above the sink.
func (s *sink) Init(info logr.RuntimeInfo) { s.callDepth = info.CallDepth }

// Enabled reports whether a V(v) Info record would be written. In
// component mode it is one atomic load.
func (s *sink) Enabled(v int) bool {
	if s.level != nil {
		return vLevel(v) >= Level(s.level.Load())
	}
	// Frames: 0 is Enabled, then callDepth logr frames, then the user.
	site := s.reg.sites.caller(s.callDepth + 1)
	return vLevel(v) >= Level(site.logger.level.Load())
}

// Info writes a V(v) record; logr has already checked Enabled.
func (s *sink) Info(v int, msg string, kvs ...any) { s.emit(vLevel(v), nil, msg, kvs) }

// Error writes an error-level record, or a warning or critical one when
// kvs starts with the reserved severity key of Warning and Critical. logr
// does not call Enabled first, so emit filters.
func (s *sink) Error(err error, msg string, kvs ...any) {
	level := LevelError
	if l, rest, ok := severityOf(kvs); ok {
		level, kvs = l, rest
	}
	s.emit(level, err, msg, kvs)
}

// emit filters and writes one record. It must be called straight from Info
// or Error: the call-site lookup counts the frames above it.
func (s *sink) emit(level Level, err error, msg string, kvs []any) {
	var site *callSite
	name := s.fullName
	if s.level != nil {
		if level < Level(s.level.Load()) {
			return
		}
		if s.reg.format.Load().needSource {
			site = s.reg.sites.caller(s.callDepth + 2) // emit, Info/Error, logr frames
		}
	} else {
		site = s.reg.sites.caller(s.callDepth + 2)
		if level < Level(site.logger.level.Load()) {
			return
		}
		name = site.logger.name + s.names
	}
	s.reg.write(name, site, level, err, msg, s.values, kvs)
}

// WithValues returns a sink whose records carry kvs after the message.
func (s *sink) WithValues(kvs ...any) logr.LogSink {
	c := *s
	c.values = appendKeyValues(append([]byte(nil), s.values...), kvs)
	return &c
}

// WithName returns a sink whose logger name (%n) has name appended after a
// dot. The level stays the component's: /logging knows components only.
func (s *sink) WithName(name string) logr.LogSink {
	c := *s
	c.names = s.names + "." + name
	c.fullName = c.component + c.names
	return &c
}

// WithCallDepth returns a sink that skips depth more frames to find the
// call site (for helpers that wrap a Logger).
func (s *sink) WithCallDepth(depth int) logr.LogSink {
	c := *s
	c.callDepth += depth
	return &c
}
