package httpconn

import (
	"errors"
	"io"
	"net/http"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// bodyTooLarge is the body of Envoy's 413 for a request body over a
// buffering filter's limit (CodeUtility::toString).
const bodyTooLarge = "Payload Too Large"

// BufferRequestBody implements httpfilter.Stream: it reads the request
// body into memory and leaves, as s.body, a source that gives the buffered
// bytes again before the rest, so that the router forwards the whole body.
func (s *stream) BufferRequestBody(limit int, partial bool) (body []byte, complete, ok bool) {
	return s.bufferBody(limit, partial, false)
}

// bufferBody is BufferRequestBody; upstream tells that an upstream filter
// asks, for the attempt in progress (see upstream_body.go).
func (s *stream) bufferBody(limit int, partial, upstream bool) (body []byte, complete, ok bool) {
	if rb, isReplay := s.body.(*replayBody); isReplay {
		// A second buffering filter: what the first held is read
		// again, then the rest.
		if rb.done || (partial && len(rb.buf) >= limit) {
			return rb.buf, rb.done, true
		}
		if !partial && len(rb.buf) > limit {
			s.payloadTooLarge(upstream)
			return nil, false, false
		}
	}
	if s.body == nil {
		return nil, true, true
	}
	if s.expect100 {
		s.expect100 = false
		if err := s.down.continue100(); err != nil {
			s.requestBodyFailed(err)
			return nil, false, false
		}
	}
	rb, isReplay := s.body.(*replayBody)
	if !isReplay {
		rb = &replayBody{s: s, src: s.body}
		if upstream {
			s.holdForAttempt()
		}
		s.body = rb
	}
	for !rb.done {
		if partial && len(rb.buf) >= limit {
			break
		}
		p, err := rb.src.Next()
		if len(p) > 0 {
			rb.buf = append(rb.buf, p...)
			s.bytesRecv += uint64(len(p))
			rb.counted += len(p)
		}
		if errors.Is(err, io.EOF) {
			rb.done = true
			break
		}
		if err != nil {
			s.requestBodyFailed(err)
			return nil, false, false
		}
		if !partial && len(rb.buf) > limit {
			s.payloadTooLarge(upstream)
			return nil, false, false
		}
	}
	return rb.buf, rb.done, true
}

// payloadTooLarge answers a request whose body went over a buffering
// filter's limit, as Envoy's filter manager does. Only the connection
// manager's filters count downstream_rq_too_large: Envoy's upstream
// filter manager leaves onRequestDataTooLarge empty.
func (s *stream) payloadTooLarge(upstream bool) {
	if !upstream {
		s.m.stats.rqTooLarge.Inc()
	}
	s.localReply(413, bodyTooLarge, 0, "request_payload_too_large")
}

// replayBody is the request body once a filter has buffered part or all
// of it: the buffered bytes, then what is left of the source.
type replayBody struct {
	s   *stream
	src bodySource
	buf []byte
	// done: src has ended (buf is the whole body).
	done bool
	// replayed: buf has been handed out.
	replayed bool
	// counted is how many bytes of buf were already counted in the
	// stream's bytesRecv, which the router counts again as it forwards.
	counted int
}

// Next implements bodySource.
func (b *replayBody) Next() ([]byte, error) {
	if !b.replayed {
		b.replayed = true
		// The router counts the bytes it forwards; these were counted
		// as they arrived.
		b.s.bytesRecv -= uint64(b.counted)
		b.counted = 0
		if len(b.buf) > 0 {
			return b.buf, nil
		}
	}
	if b.done {
		return nil, io.EOF
	}
	return b.src.Next()
}

// skipBuffered reports whether the rest of the body is already read or
// buffered by the connection, so that a local reply can leave the
// connection open (see skipBody).
func (b *replayBody) skipBuffered() bool {
	if b.done {
		return true
	}
	br, ok := b.src.(*http1.BodyReader)
	return ok && br.SkipBuffered()
}

// RangeRequestHeaders implements httpfilter.Stream.
func (s *stream) RangeRequestHeaders(fn func(name, value string) bool) {
	for i := range s.reqHeaders.fields {
		f := &s.reqHeaders.fields[i]
		if !fn(f.name, f.value) {
			return
		}
	}
}

var _ httpfilter.RequestTrailerSource = (*stream)(nil)

// BufferedRequestTrailers implements httpfilter.RequestTrailerSource.
func (s *stream) BufferedRequestTrailers() http.Header {
	if rb, ok := s.body.(*replayBody); ok && rb.done {
		return s.down.requestTrailers()
	}
	return nil
}
