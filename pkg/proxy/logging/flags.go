package logging

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// flag returns the appender of one spdlog flag character and records what
// the flag needs from a record, or nil for a flag that prints nothing or is
// unknown.
func (c *compiler) flag(ch byte) appender {
	f := c.f
	switch ch {
	case 'v':
		return func(dst []byte, st *formatState) []byte { return append(dst, st.msg...) }
	case '_':
		return func(dst []byte, st *formatState) []byte { return appendNewlinesEscaped(dst, st.msg) }
	case 'j':
		return func(dst []byte, st *formatState) []byte { return appendJSONEscaped(dst, st.msg) }
	case 't':
		f.needThread = true
		return func(dst []byte, st *formatState) []byte { return strconv.AppendInt(dst, int64(st.rec.ThreadID), 10) }
	case 'P':
		return func(dst []byte, _ *formatState) []byte { return strconv.AppendInt(dst, int64(f.pid), 10) }
	case 'n':
		return func(dst []byte, st *formatState) []byte { return append(dst, st.rec.Name...) }
	case 'l':
		return func(dst []byte, st *formatState) []byte { return append(dst, st.rec.Level.String()...) }
	case 'L':
		return func(dst []byte, st *formatState) []byte { return append(dst, st.rec.Level.Short()...) }
	case '@', 's', 'g', '#', '!':
		f.needSource = true
		return sourceFlag(ch)
	case 'E':
		return func(dst []byte, st *formatState) []byte { return strconv.AppendInt(dst, st.rec.Time.Unix(), 10) }
	case 'o':
		return elapsed(time.Millisecond)
	case 'i':
		return elapsed(time.Microsecond)
	case 'u':
		return elapsed(time.Nanosecond)
	case 'O':
		return elapsed(time.Second)
	case '+':
		return c.full()
	}
	if a := timeFlag(ch); a != nil {
		f.needTime = true
		return a
	}
	return nil
}

// isNoOutputFlag reports spdlog's colour-range markers, which print nothing
// on a sink without colours (Envoy's sinks have none).
func isNoOutputFlag(ch byte) bool { return ch == '^' || ch == '$' }

// sourceFlag returns the appender of a source-location flag. Like spdlog,
// each prints nothing when the record has no source location.
func sourceFlag(ch byte) appender {
	switch ch {
	case '@':
		return func(dst []byte, st *formatState) []byte {
			if st.rec.File == "" {
				return dst
			}
			dst = append(dst, st.rec.File...)
			dst = append(dst, ':')
			return strconv.AppendInt(dst, int64(st.rec.Line), 10)
		}
	case 's':
		return func(dst []byte, st *formatState) []byte { return append(dst, baseName(st.rec.File)...) }
	case 'g':
		return func(dst []byte, st *formatState) []byte { return append(dst, st.rec.File...) }
	case '#':
		return func(dst []byte, st *formatState) []byte {
			if st.rec.File == "" {
				return dst
			}
			return strconv.AppendInt(dst, int64(st.rec.Line), 10)
		}
	default: // '!'
		return func(dst []byte, st *formatState) []byte {
			if st.rec.File == "" {
				return dst
			}
			return append(dst, st.rec.Function...)
		}
	}
}

// baseName is the last element of a slash-separated path, without
// allocating.
func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// elapsed returns spdlog's "time since the previous record" flag in unit.
// Each use of the flag in a pattern keeps its own previous time, as in
// spdlog; the first record reports 0.
func elapsed(unit time.Duration) appender {
	var last atomic.Int64 // Unix nanoseconds of the previous record, 0 before the first
	return func(dst []byte, st *formatState) []byte {
		now := st.rec.Time.UnixNano()
		prev := last.Swap(now)
		var d int64
		if prev != 0 && now > prev {
			d = now - prev
		}
		return strconv.AppendInt(dst, d/int64(unit), 10)
	}
}

// full is spdlog's %+, "[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] [%s:%#] %v", which
// leaves out the name and the source location when they are empty.
func (c *compiler) full() appender {
	head := c.mustSub("[%Y-%m-%d %H:%M:%S.%e] ")
	name := c.mustSub("[%n] ")
	level := c.mustSub("[%l] ")
	source := c.mustSub("[%s:%#] ")
	msg := c.mustSub("%v")
	return func(dst []byte, st *formatState) []byte {
		dst = run(dst, st, head)
		if st.rec.Name != "" {
			dst = run(dst, st, name)
		}
		dst = run(dst, st, level)
		if st.rec.File != "" {
			dst = run(dst, st, source)
		}
		return run(dst, st, msg)
	}
}

// mustSub compiles one of the fixed, valid sub-patterns of %+.
func (c *compiler) mustSub(pattern string) []appender {
	steps, err := c.sub(pattern)
	if err != nil {
		panic("logging: invalid built-in pattern " + pattern) // a bug in this file, not bad input
	}
	return steps
}

func run(dst []byte, st *formatState, steps []appender) []byte {
	for _, s := range steps {
		dst = s(dst, st)
	}
	return dst
}
