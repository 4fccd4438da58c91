package logging

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Record is one log record as the formatter sees it.
type Record struct {
	// Time stamps the record; the date and time flags print it in its own
	// location.
	Time time.Time
	// Level is the record's severity (%l, %L).
	Level Level
	// Name is the logger name (%n).
	Name string
	// Message is the payload (%v, %_, %j): the message and its rendered
	// key/values.
	Message string
	// File is the source file path relative to the module root (%g); ""
	// when unknown, which makes every source flag print nothing.
	File string
	// Line is the source line (%#).
	Line int
	// Function is the package-qualified function name (%!).
	Function string
	// ThreadID is the OS thread that logged (%t).
	ThreadID int
}

// appender appends one compiled piece of a pattern to dst.
type appender func(dst []byte, st *formatState) []byte

// formatState carries one record through the appenders. It lives in a pool
// so that formatting allocates nothing per record: appenders are opaque
// function values, so anything passed to them by pointer would otherwise
// escape to the heap.
type formatState struct {
	rec Record
	tm  brokenTime
	msg []byte // the payload the message flags print
	out []byte // the formatted record
	esc []byte // the escaped record (--log-format-escaped)
}

// maxPooledBuffer bounds the buffers kept in the pool, so that one huge
// record does not pin its memory for the life of the process.
const maxPooledBuffer = 64 << 10

// Formatter renders records with a compiled spdlog pattern. It is safe for
// concurrent use.
type Formatter struct {
	pattern string
	steps   []appender
	// needTime, needSource and needThread say which parts of a record the
	// pattern prints, so that the sink computes only those.
	needTime, needSource, needThread bool
	pid                              int
	pool                             sync.Pool
}

// errDanglingPercent reports a '%' (and padding) with no flag after it.
var errDanglingPercent = errors.New("pattern ends with an incomplete '%' flag")

// CompileFormat compiles an spdlog pattern (the --log-format value). Every
// flag of spdlog's table and Envoy's %_ and %j are understood, with
// spdlog's padding syntax (%8l, %-8l, %=8l, %8!l). An unknown flag prints
// literally, as spdlog does; a pattern that ends inside a flag is an error.
func CompileFormat(pattern string) (*Formatter, error) {
	f := &Formatter{pattern: pattern, pid: os.Getpid()}
	f.pool.New = func() any { return new(formatState) }
	c := compiler{f: f}
	if err := c.compile(pattern); err != nil {
		return nil, fmt.Errorf("log format %q: %w", pattern, err)
	}
	return f, nil
}

// Pattern returns the pattern the formatter was compiled from.
func (f *Formatter) Pattern() string { return f.pattern }

// Format appends r, formatted and terminated by a newline, to dst.
func (f *Formatter) Format(dst []byte, r *Record) []byte {
	st := f.getState()
	st.rec = *r
	st.msg = append(st.msg[:0], r.Message...)
	dst = f.render(dst, st)
	f.putState(st)
	return dst
}

// render appends the record in st to dst.
func (f *Formatter) render(dst []byte, st *formatState) []byte {
	if f.needTime {
		st.tm = breakDown(st.rec.Time)
	}
	for _, step := range f.steps {
		dst = step(dst, st)
	}
	return append(dst, '\n')
}

func (f *Formatter) getState() *formatState { return f.pool.Get().(*formatState) }

func (f *Formatter) putState(st *formatState) {
	if cap(st.msg) > maxPooledBuffer || cap(st.out) > maxPooledBuffer || cap(st.esc) > maxPooledBuffer {
		return
	}
	st.rec = Record{} // drop references to strings the caller owns
	f.pool.Put(st)
}
