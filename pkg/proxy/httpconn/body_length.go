package httpconn

import (
	"errors"
	"io"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// A body length a filter declares (httpfilter.BodyLengthSetter): ext_proc's
// allow_content_length_header. The length is announced when the
// declaring filter is the only one that changes the body's length, and
// the body is held to it: a body that disagrees fails rather than leave
// with a framing it breaks (Envoy's codecs send what they are given: the
// peer then sees a body its framing does not describe).

// errLengthMismatch fails a body whose length is not the one declared.
var errLengthMismatch = errors.New("body length differs from the content-length a filter declared")

// declaredLength is a declared body length.
type declaredLength struct {
	set bool
	n   int64
}

var _ httpfilter.BodyLengthSetter = (*stream)(nil)

// SetRequestBodyLength implements httpfilter.BodyLengthSetter.
func (s *stream) SetRequestBodyLength(n int64) {
	if n >= 0 && s.body != nil {
		s.reqDecl = declaredLength{set: true, n: n}
	}
}

// SetResponseBodyLength implements httpfilter.BodyLengthSetter.
func (s *stream) SetResponseBodyLength(n int64) {
	if n >= 0 {
		s.xdown.decl = declaredLength{set: true, n: n}
	}
}

// applyRequestLength frames the request body with its declared length,
// once its decoders are known: when at most one of them (the declaring
// filter's) changes its length.
func (s *stream) applyRequestLength() {
	if !s.reqDecl.set || s.body == nil {
		return
	}
	changing := 0
	count := func(decs []httpfilter.DataDecoder) {
		for _, d := range decs {
			if k, ok := d.(httpfilter.RequestLengthKeeper); !ok || !k.KeepsRequestLength() {
				changing++
			}
		}
	}
	for _, b := range s.sources {
		if b.trailerDecs != nil {
			count(b.trailerDecs)
		} else {
			count(b.decs)
		}
	}
	count(s.reqXform)
	if changing > 1 {
		return
	}
	n := s.reqDecl.n
	s.reqLength, s.reqChunked = n, false
	s.body = &lengthBody{src: s.body, left: n}
}

// lengthBody holds a request body to its declared length.
type lengthBody struct {
	src  bodySource
	left int64
}

// Next implements bodySource.
func (b *lengthBody) Next() ([]byte, error) {
	p, err := b.src.Next()
	if int64(len(p)) > b.left {
		return nil, errLengthMismatch
	}
	b.left -= int64(len(p))
	if errors.Is(err, io.EOF) && b.left != 0 {
		return nil, errLengthMismatch
	}
	return p, err
}

// responseLength is the response body length to announce when a filter
// declared one, or n: the declared length counts when at most one encoder
// changes the body's length. It arms the check of the bytes written.
func (d *encodingDown) responseLength(n int64) int64 {
	if !d.decl.set {
		return n
	}
	changing := 0
	for _, e := range d.encs {
		if k, ok := e.(httpfilter.LengthKeeper); !ok || !k.KeepsLength() {
			changing++
		}
	}
	if changing > 1 {
		d.decl.set = false
		return n
	}
	d.counting, d.left = true, d.decl.n
	return d.decl.n
}

// writeInner writes body bytes to the client, held to a declared length.
func (d *encodingDown) writeInner(p []byte) error {
	if d.counting {
		if int64(len(p)) > d.left {
			return errLengthMismatch
		}
		d.left -= int64(len(p))
	}
	return d.inner.writeBody(p)
}

// checkLength fails a response body that ended short of its declared
// length.
func (d *encodingDown) checkLength() error {
	if d.counting && d.left != 0 {
		return errLengthMismatch
	}
	return nil
}
