package tap

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
)

// filter is one request's tap. It captures only when a configuration is
// active at the request's start (an attached session, or a static one)
// and its tap_enabled share draws the request; otherwise it does
// nothing.
type filter struct {
	cfg   *filterConfig
	tc    *tap.Config
	trace *tap.Trace
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// rangeHeaders is the connection manager's header map when it can list
// its fields.
type rangeHeaders interface {
	Range(fn func(name, value string) bool)
}

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.tc = f.cfg.static
	if f.cfg.reg != nil {
		if sess := f.cfg.reg.Active(f.cfg.id); sess != nil {
			f.tc = sess.Config
		}
	}
	if f.tc == nil || !f.tc.Sampled(f.cfg.runtime) {
		f.tc = nil
		return httpfilter.Continue
	}
	f.trace = f.tc.NewTrace()
	if f.cfg.rec.time {
		f.trace.Extras.RequestHeadersAt = time.Now()
	}
	if f.cfg.rec.downstream {
		info := s.Info()
		f.trace.Extras.Local, f.trace.Extras.Remote = info.LocalAddress, info.RemoteAddress
	}
	req := s.Request()
	h := tap.Headers{
		{Name: ":authority", Value: req.Host},
		{Name: ":path", Value: req.Path},
		{Name: ":method", Value: req.Method},
		{Name: ":scheme", Value: req.Scheme},
	}
	s.RangeRequestHeaders(func(name, value string) bool {
		h = append(h, tap.Header{Name: name, Value: value})
		return true
	})
	f.trace.RequestHeaders = h
	f.trace.RequestHeadersDone()
	s.TransformRequestBody(&requestBody{f.trace})
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if f.trace == nil {
		return httpfilter.Continue
	}
	if f.cfg.rec.time {
		f.trace.Extras.ResponseHeadersAt = time.Now()
	}
	h := tap.Headers{{Name: ":status", Value: strconv.Itoa(s.ResponseStatus())}}
	if rh, ok := s.ResponseHeaders().(rangeHeaders); ok {
		rh.Range(func(name, value string) bool {
			h = append(h, tap.Header{Name: name, Value: value})
			return true
		})
	}
	f.trace.ResponseHeadersDone(h)
	s.TransformResponseBody(&responseBody{f.trace})
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: the exchange is over; a
// matching buffered trace goes to the sink (Envoy submits it when the
// stream is logged), and a traced request counts.
func (f *filter) OnDestroy() {
	if f.trace != nil && f.trace.Finish() {
		f.cfg.tapped.Inc()
	}
	f.trace, f.tc = nil, nil
	f.cfg.pool.Put(f)
}

// requestBody copies the request body and trailers into the trace,
// passing them on unchanged.
type requestBody struct{ t *tap.Trace }

var _ httpfilter.TrailerDecoder = (*requestBody)(nil)

func (r *requestBody) DecodeData(p []byte) ([]byte, error) {
	r.t.RequestData(p)
	return p, nil
}

func (r *requestBody) DecodeEnd() ([]byte, error) { return nil, nil }

// DecodeTrailers implements httpfilter.TrailerDecoder: it records the
// request's trailers, when it has some.
func (r *requestBody) DecodeTrailers(trailers http.Header) http.Header {
	if len(trailers) > 0 {
		r.t.RequestTrailersDone(trailerFields(trailers))
	}
	return trailers
}

// responseBody copies the response body and trailers into the trace.
type responseBody struct{ t *tap.Trace }

func (r *responseBody) EncodeData(p []byte) ([]byte, error) {
	r.t.ResponseData(p)
	return p, nil
}

func (r *responseBody) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if len(trailers) == 0 {
		return nil, trailers, nil
	}
	r.t.ResponseTrailersDone(trailerFields(trailers))
	return nil, trailers, nil
}

// trailerFields are trailers as captured fields, names in lower case.
func trailerFields(trailers http.Header) tap.Headers {
	h := make(tap.Headers, 0, len(trailers))
	for name, vs := range trailers {
		for _, v := range vs {
			h = append(h, tap.Header{Name: strings.ToLower(name), Value: v})
		}
	}
	return h
}
