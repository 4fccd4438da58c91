package httpconn

import (
	"bytes"
	"errors"
	"io"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// The request body an attempt's upstream filters buffer (Envoy's
// upstream filter manager buffers per UpstreamRequest). An upstream
// filter that calls BufferRequestBody reads the body into a replayBody of
// the attempt, in front of what the attempt would have read: the bytes a
// retry replays (retryBody), a shadow's copy (mirrorBody), the bytes a
// downstream filter buffered, or the client's. The attempt then forwards
// the buffered bytes and the rest. The next attempt starts again from
// what was in front before, rewound for the retry, so that its filters
// buffer the body again, as Envoy's router gives each upstream request
// the whole body it kept for retries. The decoders an attempt's filters
// ask for (TransformRequestBody: header_mutation's trailer edits) run on
// the attempt's body in the same way, in front of the rest. A hedged attempt starts once the
// attempts before it have sent the whole body (see hedgesHTTP1 and
// armOnBody): its filters read the copy kept for retries again.

// holdForAttempt records the body source in front of which an upstream
// filter is about to buffer, to be put back once the attempt is over
// (restoreAttemptBody). Only the first buffering filter of an attempt
// records it.
func (s *stream) holdForAttempt() {
	if s.attemptSrc == nil {
		s.attemptSrc = s.body
	}
}

// restoreAttemptBody puts back the body source of the last attempt whose
// upstream filters buffered or transformed the body: before another
// attempt (which rewinds a retry's copy as usual), and once the router is
// done. The attempt's decoders are let go: a transport still reading the
// body no longer reaches them.
func (s *stream) restoreAttemptBody() {
	if s.attemptSrc == nil {
		return
	}
	s.body, s.attemptSrc = s.attemptSrc, nil
	if b := s.upXbody; b != nil {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		s.upXbody = nil
		s.reqLength, s.reqChunked = s.heldLength, s.heldChunked
	}
}

// transformAttempt wraps the attempt's body in the decoders its upstream
// filters asked for (upstreamStream.TransformRequestBody), as
// transformRequest does for the connection manager's filters: a body
// whose length a decoder may change goes chunked. The decoders' trailers
// start from the ones the request would go upstream with.
func (s *stream) transformAttempt() {
	if len(s.upXform) == 0 {
		return
	}
	s.holdForAttempt()
	s.upXbody = &decodingBody{s: s, src: s.body, decs: s.upXform, upstream: true}
	// A slice of the attempt's own: the decoding body keeps it.
	s.upXform = nil
	s.body = s.upXbody
	s.heldLength, s.heldChunked = s.reqLength, s.reqChunked
	for _, d := range s.upXbody.decs {
		if k, ok := d.(httpfilter.RequestLengthKeeper); !ok || !k.KeepsRequestLength() {
			s.reqLength, s.reqChunked = -1, true
			return
		}
	}
}

// rewindAttemptBody readies a hedged attempt's body: when the upstream
// filters of the attempt before buffered it, the copy kept for retries
// is put back in front, from its start, for this attempt's filters to
// buffer again. No attempt reads the body any more: it went out whole.
func (s *stream) rewindAttemptBody() {
	if s.attemptSrc == nil {
		return
	}
	s.restoreAttemptBody()
	if r := s.retry.body; r != nil {
		r.rewind()
	}
}

// attemptBodyCopy is a copy of the body a hedged HTTP/2 attempt sends:
// kept, the whole body kept for retries; read through the decoders of the
// attempt's upstream filters when it has some, which then leave the
// attempt's trailers. A decoder's error leaves the body as kept.
func (s *stream) attemptBodyCopy(kept []byte) []byte {
	if s.upXbody == nil {
		return bytes.Clone(kept)
	}
	var out []byte
	for {
		p, err := s.body.Next()
		out = append(out, p...)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return bytes.Clone(kept)
		}
	}
}
