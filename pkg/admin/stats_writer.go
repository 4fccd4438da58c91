package admin

import (
	"net/http"
	"time"
)

// streamWriter is the way long responses (stats renders, the breaker event
// stream) reach their client. Every write and flush gets its own deadline,
// so a client that stops reading fails its own response after timeout, while
// one that reads slowly still gets everything. Other requests never wait on
// it: each connection has its own goroutine and the renders hold no lock
// while writing.
type streamWriter struct {
	w       *Response
	rc      *http.ResponseController
	timeout time.Duration
	// armed says a deadline is set on the connection and must be lifted
	// before the connection serves its next request.
	armed bool
	// unsupported is set once the ResponseWriter refuses deadlines (a test
	// recorder): writes then go through without one.
	unsupported bool
}

func newStreamWriter(w *Response, timeout time.Duration) *streamWriter {
	return &streamWriter{w: w, rc: http.NewResponseController(w.rw), timeout: timeout}
}

// Write sends p under a fresh deadline.
func (s *streamWriter) Write(p []byte) (int, error) {
	s.arm()
	return s.w.Write(p)
}

// Flush sends what is buffered under a fresh deadline and reports whether
// the response is still deliverable.
func (s *streamWriter) Flush() bool {
	s.arm()
	s.w.Flush()
	return s.w.err == nil
}

// failed reports whether a write or flush failed: the client went away or
// stopped reading.
func (s *streamWriter) failed() bool { return s.w.err != nil }

// release flushes the rest of the response under the deadline, then lifts
// the deadline: a kept-alive connection must not carry it into its next
// request.
func (s *streamWriter) release() {
	if !s.armed {
		return
	}
	s.w.Flush()
	_ = s.rc.SetWriteDeadline(time.Time{})
	s.armed = false
}

// arm sets the deadline of the next write.
func (s *streamWriter) arm() {
	if s.unsupported {
		return
	}
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil {
		s.unsupported = true
		return
	}
	s.armed = true
}
