package httpconn

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Body transformation: the filters that asked for a body
// (httpfilter.Stream.TransformRequestBody, TransformResponseBody) see
// every piece of it. The request body is wrapped as a bodySource, the
// response's downstream as a downstream, so that the forwarding paths
// (HTTP/1 and HTTP/2 upstreams, local replies) stay as they are.

// TransformRequestBody implements httpfilter.Stream.
func (s *stream) TransformRequestBody(d httpfilter.DataDecoder) {
	if s.body != nil && d != nil {
		s.reqXform = append(s.reqXform, d)
	}
}

// TransformResponseBody implements httpfilter.Stream.
func (s *stream) TransformResponseBody(e httpfilter.DataEncoder) {
	if s.respHasBody && e != nil {
		s.respXform = append(s.respXform, e)
	}
}

// RequestBody implements httpfilter.Stream.
func (s *stream) RequestBody() (int64, bool) {
	if s.body == nil {
		return 0, false
	}
	if s.reqChunked {
		return -1, true
	}
	return s.reqLength, true
}

// ResponseBody implements httpfilter.Stream.
func (s *stream) ResponseBody() (int64, bool) { return s.respLength, s.respHasBody }

// StreamState implements httpfilter.Stream.
func (s *stream) StreamState(key any, create func() any) any {
	for _, kv := range s.state {
		if kv.key == key {
			return kv.value
		}
	}
	v := create()
	s.state = append(s.state, stateEntry{key: key, value: v})
	return v
}

// stateEntry is one value of StreamState.
type stateEntry struct {
	key, value any
}

// transformRequest wraps the request body in the decoders the filters
// asked for: its length is unknown from now on, unless every decoder
// keeps it (httpfilter.RequestLengthKeeper).
func (s *stream) transformRequest() {
	defer s.applyRequestLength()
	if len(s.reqXform) == 0 || s.body == nil {
		return
	}
	// A body of its own per request: an HTTP/2 upstream transport may
	// still read it after the stream ended (see untransform).
	s.xbody = s.decodingChain(s.body, s.reqXform)
	s.body = s.xbody
	for _, d := range s.reqXform {
		if k, ok := d.(httpfilter.RequestLengthKeeper); !ok || !k.KeepsRequestLength() {
			s.reqLength, s.reqChunked = -1, true
			return
		}
	}
	// Decoders that only read the body leave its length and framing as
	// the client sent them.
}

// transformResponse wraps the downstream in the encoders the filters
// asked for, once the response head is final: it returns the body length
// to announce, -1 (unknown) when the body is transformed.
func (s *stream) transformResponse(n int64, hasBody bool) int64 {
	if len(s.respXform) == 0 {
		return n
	}
	if !hasBody {
		s.respXform = s.respXform[:0]
		return n
	}
	// A length a filter declared in its EncodeHeaders stays.
	s.xdown = encodingDown{inner: s.down, s: s, encs: s.respXform, decl: s.xdown.decl}
	for _, e := range s.respXform {
		// A tunnel's head must leave at once: the bytes that follow
		// wait for it.
		if h, ok := e.(httpfilter.HeadHolder); ok && h.HoldsHead() && !s.upg.tunnel && s.status != 101 {
			s.xdown.hold = true
		}
		if _, ok := e.(httpfilter.Throttle); ok {
			s.xdown.throttled = true
		}
	}
	s.xdown.startEmitters()
	s.down = &s.xdown
	n = transformedLength(s.respXform, n)
	if !s.xdown.hold {
		// A held head announces its length when it leaves.
		n = s.xdown.responseLength(n)
	}
	return n
}

// transformedLength is the length of a response body of n bytes through
// encs: -1 (unknown) when one may change it.
func transformedLength(encs []httpfilter.DataEncoder, n int64) int64 {
	if _, ok := encs[0].(*replacement); ok && len(encs) == 1 {
		// Only the replaced body goes out: its length is known.
		return n
	}
	for _, e := range encs {
		if k, ok := e.(httpfilter.LengthKeeper); !ok || !k.KeepsLength() {
			return -1
		}
	}
	// Encoders that only read the body leave its length as it was.
	return n
}

var _ httpfilter.SourceStarter = (*stream)(nil)

// StartRequestSource implements httpfilter.SourceStarter: the body so
// far (the client's, through the decoders added before d) becomes d's
// source at once, and the body the filters after it see, buffer or
// transform, and the router forwards, is d's output. The chain is kept
// in sources, to be closed at the stream's end and for the trailers it
// leaves; xbody names it, so that the client's body is never skipped
// under the source's reads.
func (s *stream) StartRequestSource(d httpfilter.SourceDecoder) bool {
	if s.body == nil || d == nil {
		return false
	}
	if s.expect100 {
		// The source reads the body now: the client waiting for 100
		// Continue is told to send it.
		s.expect100 = false
		if err := s.down.continue100(); err != nil {
			s.requestBodyFailed(err)
			return false
		}
	}
	// A slice of the chain's own: the decoding body keeps it.
	decs := append(s.reqXform[:len(s.reqXform):len(s.reqXform)], d)
	s.reqXform = nil
	b := s.decodingChain(s.body, decs)
	s.sources = append(s.sources, b)
	s.xbody, s.body = b, b
	s.reqLength, s.reqChunked = -1, true
	return true
}

// trailersBefore are the trailers decoding body b starts from: those a
// started chain it reads left, else the client's.
func (s *stream) trailersBefore(b *decodingBody) http.Header {
	i := len(s.sources) - 1
	for j, c := range s.sources {
		if c == b {
			i = j - 1
			break
		}
	}
	if i >= 0 && s.sources[i].done {
		return s.sources[i].trailer
	}
	return s.down.requestTrailers()
}

// SetResponseStatus implements httpfilter.ResponseStatusSetter.
func (s *stream) SetResponseStatus(status int) { s.status = status }

var _ httpfilter.ResponseStatusSetter = (*stream)(nil)

// untransform undoes the wrappers at the end of the stream.
func (s *stream) untransform() {
	if s.down == &s.xdown {
		s.down = s.xdown.inner
	}
	if em := s.xdown.em; em != nil {
		// An encoder's goroutine may still hold its emitter.
		em.mu.Lock()
		em.closed = true
		em.mu.Unlock()
	}
	s.xdown = encodingDown{}
	if b := s.xbody; b != nil {
		// The filters are destroyed next: a transport still reading
		// the body must not reach their decoders any more.
		b.close()
		s.xbody = nil
		s.reqXform = nil
	}
	for i, b := range s.sources {
		b.close()
		s.sources[i] = nil
	}
	s.sources = s.sources[:0]
	s.reqDecl = declaredLength{}
	clear(s.reqXform)
	s.reqXform = s.reqXform[:0]
	clear(s.respXform)
	s.respXform = s.respXform[:0]
	clear(s.state)
	s.state = s.state[:0]
}

// bodyErrorReply answers a request whose body a filter refused
// (httpfilter.BodyError) with the filter's status and body, in plain
// HTTP even for a gRPC request, as Envoy's filters answer it; the
// encoder filters still see the reply.
func (s *stream) bodyErrorReply(be *httpfilter.BodyError) {
	s.details = be.Details
	if s.started {
		s.resetDownstream()
		return
	}
	s.respHeaders.reset()
	s.status = be.Status
	if be.Body != "" {
		s.respHeaders.Add("content-type", "text/plain")
	}
	s.finishLocal(be.Body)
}

// errBodyClosed is what a request body read after its stream ended
// gives.
var errBodyClosed = errors.New("request body read after the stream ended")

// decodingBody is a request body through the filters' decoders.
type decodingBody struct {
	s    *stream
	src  bodySource
	decs []httpfilter.DataDecoder
	done bool
	// mu guards the decoders against the stream's end: closed, set
	// then, stops the body.
	mu     sync.Mutex
	closed bool
	// scratch holds the last piece when decoders' ends join it.
	scratch [2][]byte
	// trailer are the request's trailers as the decoders left them
	// (see httpfilter.TrailerDecoder), set once the body has ended.
	trailer http.Header
	// upstream: the decoders are an attempt's upstream filters', whose
	// trailers start from what the connection manager's filters made
	// of the client's.
	upstream bool
	// The layers of a chain a SourceDecoder splits (see
	// decodingChain): trailerDecs are all the chain's decoders, whose
	// trailers the outer body runs; layers are the inner bodies the
	// source decoders read; tally, on an inner body, counts the
	// client's bytes it read, which in, on the body that reads the
	// source decoder's output, counts as received in place of that
	// output's length. layer: an inner body, which leaves the trailers
	// to the outer one.
	trailerDecs []httpfilter.DataDecoder
	layers      []*decodingBody
	tally, in   *atomic.Uint64
	layer       bool
}

// decodingChain wraps src in decs. A SourceDecoder splits the chain: the
// decoders before it run in an inner body of their own, which it reads,
// and its output is the source of the decoders after it.
func (s *stream) decodingChain(src bodySource, decs []httpfilter.DataDecoder) *decodingBody {
	b := &decodingBody{s: s, src: src, decs: decs}
	start := 0
	for i, d := range decs {
		sd, ok := d.(httpfilter.SourceDecoder)
		if !ok {
			continue
		}
		inner := &decodingBody{s: s, src: b.src, decs: decs[start:i], tally: new(atomic.Uint64), in: b.in, layer: true}
		b.layers = append(b.layers, inner)
		b.src, b.in = sourceFunc(sd.DecodeFrom(inner.Next, s.down.requestTrailers)), inner.tally
		start = i + 1
	}
	if start > 0 {
		b.trailerDecs, b.decs = decs, decs[start:]
	}
	return b
}

// sourceFunc is a bodySource of a function (a SourceDecoder's output).
type sourceFunc func() ([]byte, error)

// Next implements bodySource.
func (f sourceFunc) Next() ([]byte, error) { return f() }

// close stops the body and its inner layers at the stream's end.
func (b *decodingBody) close() {
	for _, l := range append(b.layers, b) {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
	}
}

// Next implements bodySource. The stream counts the bytes Next returns
// as received; it is told of the client's bytes instead.
func (b *decodingBody) Next() ([]byte, error) {
	for {
		if b.done {
			return nil, io.EOF
		}
		p, err := b.src.Next()
		raw := len(p)
		if b.in != nil {
			raw = int(b.in.Swap(0))
		}
		end := errors.Is(err, io.EOF)
		if err != nil && !end {
			var be *httpfilter.BodyError
			if errors.As(err, &be) {
				// A SourceDecoder's answer (see decodingChain).
				b.s.bodyErr.Store(be)
			}
			return nil, err
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			b.done = true
			return nil, errBodyClosed
		}
		out, xerr := b.run(p, end)
		b.mu.Unlock()
		if b.tally != nil {
			b.tally.Add(uint64(raw))
		} else {
			b.s.bytesRecv += uint64(raw) - uint64(len(out))
		}
		if xerr != nil {
			b.done = true
			var be *httpfilter.BodyError
			if errors.As(xerr, &be) {
				// The HTTP/2 upstream transport reads the body in a
				// goroutine of its own and reports only that it failed.
				b.s.bodyErr.Store(be)
			}
			return nil, xerr
		}
		if end && b.layer {
			b.done = true
			return out, io.EOF
		}
		if end {
			b.done = true
			var terr error
			if b.trailer, terr = b.decodeTrailers(); terr != nil {
				var be *httpfilter.BodyError
				if errors.As(terr, &be) {
					b.s.bodyErr.Store(be)
				}
				return nil, terr
			}
			return out, io.EOF
		}
		if len(out) > 0 {
			return out, nil
		}
	}
}

// decodeTrailers returns the client's request trailers as the decoders
// that add to them leave them, or the error of one that fails the
// request (httpfilter.CheckedTrailerDecoder).
func (b *decodingBody) decodeTrailers() (http.Header, error) {
	var t http.Header
	if b.upstream {
		t = b.s.decodedTrailers()
	} else {
		t = b.s.trailersBefore(b)
	}
	copied := false
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return t, nil
	}
	decs := b.decs
	if b.trailerDecs != nil {
		decs = b.trailerDecs
	}
	for _, d := range decs {
		td, ok := d.(httpfilter.TrailerDecoder)
		if !ok {
			continue
		}
		if !copied {
			t, copied = t.Clone(), true
		}
		if cd, ok := td.(httpfilter.CheckedTrailerDecoder); ok {
			var err error
			if t, err = cd.DecodeTrailersChecked(t); err != nil {
				return nil, err
			}
			continue
		}
		t = td.DecodeTrailers(t)
	}
	return t, nil
}

// requestTrailers are the trailers the request goes upstream with, once
// its body has ended: the client's, or what decoders made of them.
func (s *stream) requestTrailers() http.Header {
	if b := s.upXbody; b != nil && b.done {
		return b.trailer
	}
	return s.decodedTrailers()
}

// decodedTrailers are the request's trailers as the connection manager's
// filters left them, once its body has ended.
func (s *stream) decodedTrailers() http.Header {
	if b := s.xbody; b != nil && b.done {
		return b.trailer
	}
	return s.down.requestTrailers()
}

// run passes p through the decoders, and their ends after it when end.
func (b *decodingBody) run(p []byte, end bool) ([]byte, error) {
	var err error
	for i, d := range b.decs {
		if len(p) > 0 {
			if p, err = d.DecodeData(p); err != nil {
				return nil, err
			}
		}
		if end {
			tail, err := d.DecodeEnd()
			if err != nil {
				return nil, err
			}
			if len(tail) > 0 {
				buf := append(b.scratch[i%2][:0], p...)
				p = append(buf, tail...)
				b.scratch[i%2] = p
			}
		}
	}
	return p, nil
}

// encodingDown is the downstream of a response whose body goes through
// the filters' encoders.
type encodingDown struct {
	inner    downstream
	s        *stream
	encs     []httpfilter.DataEncoder
	trailer  http.Header
	finished bool
	scratch  [2][]byte
	// hold: an encoder holds the head back (httpfilter.HeadHolder);
	// held: writeHead was called and the head waits, with heldBody its
	// hasBody.
	hold, held, heldBody bool
	// throttled: an encoder meters the body out (httpfilter.Throttle):
	// the body takes the metered path (see flow).
	throttled bool
	// em, with an httpfilter.EmittingEncoder, serializes its writes
	// with the connection manager's (see emit.go).
	em *emitState
	// decl is the body length a filter declared; counting, once it is
	// announced, holds the body to it, left bytes to go (see
	// body_length.go).
	decl     declaredLength
	counting bool
	left     int64
}

var _ downstream = (*encodingDown)(nil)

// writeHead implements downstream.
func (d *encodingDown) writeHead(s *stream, n int64, hasBody bool) error {
	if d.hold {
		d.held, d.heldBody = true, hasBody
		return nil
	}
	return d.inner.writeHead(s, n, hasBody)
}

// release writes a held head, announcing n bytes of body (-1: unknown).
func (d *encodingDown) release(n int64) error {
	if !d.held {
		return nil
	}
	d.held = false
	return d.inner.writeHead(d.s, d.responseLength(n), d.heldBody)
}

// writeBody implements downstream. The stream counts the bytes given
// as sent; it is told of the bytes that left instead.
func (d *encodingDown) writeBody(p []byte) error {
	if d.em != nil {
		d.em.mu.Lock()
		defer d.em.mu.Unlock()
		d.s.bytesSent += d.em.take()
	}
	if d.throttled {
		return d.writeMetered(p)
	}
	out, err := d.run(p, false)
	if err != nil {
		return err
	}
	d.s.bytesSent += uint64(len(out)) - uint64(len(p))
	if len(out) == 0 {
		return nil
	}
	if err := d.release(-1); err != nil {
		return err
	}
	return d.writeInner(out)
}

// writeBodyString implements downstream.
func (d *encodingDown) writeBodyString(p string) error {
	return d.writeBody([]byte(p))
}

// finish implements downstream: the encoders' ends, then the trailers
// they leave, then the inner finish.
func (d *encodingDown) finish() error {
	if d.em != nil {
		d.em.mu.Lock()
		defer func() {
			d.s.bytesSent += d.em.take()
			d.em.mu.Unlock()
		}()
	}
	if !d.finished && d.throttled {
		d.finished = true
		if err := d.finishMetered(); err != nil {
			return err
		}
	}
	if !d.finished {
		d.finished = true
		out, err := d.run(nil, true)
		if err != nil {
			return err
		}
		n := int64(len(out))
		if len(d.trailer) > 0 {
			n = -1
		}
		if err := d.release(n); err != nil {
			return err
		}
		if len(out) > 0 {
			if err := d.writeInner(out); err != nil {
				return err
			}
			d.s.bytesSent += uint64(len(out))
		}
		if len(d.trailer) > 0 {
			d.inner.trailers(d.trailer)
		}
	}
	if err := d.checkLength(); err != nil {
		return err
	}
	return d.inner.finish()
}

// run passes p through the encoders, and their ends after it when end.
func (d *encodingDown) run(p []byte, end bool) ([]byte, error) {
	return d.runRange(0, len(d.encs), p, end)
}

// runRange passes p through the encoders [from, to), and their ends
// after it when end.
func (d *encodingDown) runRange(from, to int, p []byte, end bool) ([]byte, error) {
	var err error
	for i := from; i < to; i++ {
		e := d.encs[i]
		if len(p) > 0 {
			if p, err = d.encodeData(e, p); err != nil {
				return nil, err
			}
		}
		if end {
			var tail []byte
			if tail, d.trailer, err = d.encodeEnd(e); err != nil {
				return nil, err
			}
			if len(tail) > 0 {
				buf := append(d.scratch[i%2][:0], p...)
				p = append(buf, tail...)
				d.scratch[i%2] = p
			}
		}
	}
	return p, nil
}

// abort implements downstream.
func (d *encodingDown) abort() { d.inner.abort() }

// flush implements downstream: nothing leaves while the head is held.
func (d *encodingDown) flush() error {
	if d.em != nil {
		d.em.mu.Lock()
		defer d.em.mu.Unlock()
	}
	if d.held {
		return nil
	}
	return d.inner.flush()
}

// continue100 implements downstream.
func (d *encodingDown) continue100() error { return d.inner.continue100() }

// awaitBody implements downstream.
func (d *encodingDown) awaitBody() error { return d.inner.awaitBody() }

// cancelAwait implements downstream.
func (d *encodingDown) cancelAwait() { d.inner.cancelAwait() }

// endAwait implements downstream.
func (d *encodingDown) endAwait() { d.inner.endAwait() }

// abandonBody implements downstream.
func (d *encodingDown) abandonBody() { d.inner.abandonBody() }

// trailers implements downstream: kept for the encoders' ends.
func (d *encodingDown) trailers(t http.Header) { d.trailer = t }

// touch implements downstream.
func (d *encodingDown) touch(now time.Time) { d.inner.touch(now) }

// gone implements downstream.
func (d *encodingDown) gone() bool { return d.inner.gone() }
