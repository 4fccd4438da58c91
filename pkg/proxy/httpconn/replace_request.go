package httpconn

import "github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"

var _ httpfilter.RequestReplacer = (*stream)(nil)

// SetMethod implements httpfilter.RequestReplacer.
func (s *stream) SetMethod(method string) {
	s.method, s.rreq.Method, s.entry.Method = method, method, method
	s.isHead = method == "HEAD"
}

// ReplaceRequestBody implements httpfilter.RequestReplacer. The body
// becomes a replayBody that has ended: the router forwards it as it
// forwards what a filter buffered, and a local reply finds nothing left
// to skip.
func (s *stream) ReplaceRequestBody(body []byte) {
	rb, ok := s.body.(*replayBody)
	switch {
	case s.body == nil:
		rb = &replayBody{s: s}
		s.body = rb
	case !ok || !rb.done:
		// Not read to its end: the contract is broken, and the rest
		// of the body cannot be dropped here.
		return
	}
	// The router counts what it forwards as received, less what the
	// replay says was counted already: the client's bytes were counted
	// as they came, so the replacement's are declared counted.
	rb.buf, rb.replayed, rb.done, rb.counted = body, false, true, len(body)
	s.reqLength, s.reqChunked, s.expect100 = int64(len(body)), false, false
}
