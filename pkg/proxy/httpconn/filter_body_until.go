package httpconn

import (
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

var _ httpfilter.RequestBodyReader = (*stream)(nil)

// The states of ReadRequestBodyUntil's wait for the client, which the
// goroutine watching stop reads: only a wait for bytes (awaiting) may be
// cut short, never a read in progress (a read deadline in the past would
// fail it, and the body with it).
const (
	untilReading int32 = iota
	untilAwaiting
	untilStopped
)

// ReadsRequestBodyEarly implements httpfilter.RequestBodyReader.
func (s *stream) ReadsRequestBodyEarly() bool {
	return s.body != nil && len(s.reqXform) == 0 && len(s.sources) == 0
}

// ReadRequestBodyUntil implements httpfilter.RequestBodyReader: the
// pieces are read as BufferRequestBody reads them (into the replayBody
// the router forwards from), one at a time, each after the downstream
// says bytes are there (awaitBody), a wait that cancelAwait cuts short
// once stop is closed.
func (s *stream) ReadRequestBodyUntil(stop <-chan struct{}, limit int, fn func(p []byte, end bool)) (held []byte, complete, ok bool) {
	if s.body == nil {
		fn(nil, true)
		return nil, true, true
	}
	// What an earlier filter buffered (or nothing, but the replayBody
	// and the 100 Continue a client may wait for).
	held, complete, ok = s.bufferBody(0, true, false)
	if !ok {
		return nil, false, false
	}
	if len(held) > 0 || complete {
		fn(held, complete)
	}
	if complete || len(held) >= limit {
		return held, complete, true
	}
	var state atomic.Int32
	quit, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-stop:
			if state.Swap(untilStopped) == untilAwaiting {
				s.down.cancelAwait()
			}
		case <-quit:
		}
	}()
	defer func() {
		close(quit)
		<-watched
		if state.Load() == untilStopped {
			// The downstream's read deadline again, if the watcher
			// cut a wait short.
			s.down.endAwait()
		}
	}()
	rb := s.body.(*replayBody)
	for !complete && len(held) < limit {
		if !state.CompareAndSwap(untilReading, untilAwaiting) {
			break
		}
		s.awaitPiece(rb)
		if !state.CompareAndSwap(untilAwaiting, untilReading) {
			break
		}
		n := len(held)
		if held, complete, ok = s.bufferBody(n+1, true, false); !ok {
			return nil, false, false
		}
		if len(held) > n || complete {
			fn(held[n:], complete)
		}
	}
	return held, complete, true
}

// awaitPiece waits until the body's next piece (or its end) can be read
// without waiting for the client, or until cancelAwait. An error (a
// timeout, the client gone) is left for the read, which answers it. An
// HTTP/1 body's framing may be buffered without data (the CRLF after a
// chunk): its reader says when a piece is there, and the wait goes on
// for more bytes until then.
func (s *stream) awaitPiece(rb *replayBody) {
	br, isH1 := rb.src.(*http1.BodyReader)
	c, isConn := s.down.(*serverConn)
	if !isH1 || !isConn {
		_ = s.down.awaitBody()
		return
	}
	for !br.Ready() {
		if c.awaitMore() != nil {
			return
		}
	}
}
