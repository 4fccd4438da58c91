package jsontometadata

import (
	"net/http"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// NewFilter implements httpfilter.Config: the filter keeps what it
// buffers of the response, so each stream has its own.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{c: c} }

// filter is one stream's filter.
type filter struct {
	c *filterConfig
	s httpfilter.Stream
	// body is what the response body has brought so far; over is set
	// once it passed maxBody.
	body []byte
	over bool
}

var (
	_ httpfilter.Decoder      = (*filter)(nil)
	_ httpfilter.Encoder      = (*filter)(nil)
	_ httpfilter.LengthKeeper = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: the request body is read
// whole before the request goes on (Envoy's StopIterationAndBuffer), so
// routing, the router's header formats and the filters after it see the
// metadata.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	m := f.c.request
	if m == nil || len(m.rules) == 0 {
		return httpfilter.Continue
	}
	if !m.contentTypeAllowed(headerValue(s.RequestHeaders().Get("content-type"))) {
		f.c.rq.mismatched.Inc()
		return httpfilter.Continue
	}
	var wrote bool
	if _, has := s.RequestBody(); !has {
		f.c.rq.noBody.Inc()
		wrote = apply(s, m.allOnMissing())
	} else {
		body, _, ok := s.BufferRequestBody(maxBody, false)
		if !ok {
			return httpfilter.Stop
		}
		wrote = process(s, m, body, &f.c.rq)
	}
	if wrote {
		// As Envoy: routing sees the request's new metadata.
		s.ClearRouteCache()
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: a response body of an
// allowed type is read as it passes (EncodeData) and its rules applied
// at its end (EncodeEnd), before the access logs run.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	m := f.c.response
	if m == nil || len(m.rules) == 0 {
		return httpfilter.Continue
	}
	if !m.contentTypeAllowed(headerValue(s.ResponseHeaders().Get("content-type"))) {
		f.c.resp.mismatched.Inc()
		return httpfilter.Continue
	}
	if _, has := s.ResponseBody(); !has {
		f.c.resp.noBody.Inc()
		apply(s, m.allOnMissing())
		return httpfilter.Continue
	}
	f.s = s
	s.TransformResponseBody(f)
	return httpfilter.Continue
}

// EncodeData implements httpfilter.DataEncoder: the body passes
// unchanged; the filter keeps a copy, up to maxBody.
func (f *filter) EncodeData(p []byte) ([]byte, error) {
	if !f.over {
		if len(f.body)+len(p) > maxBody {
			f.over, f.body = true, nil
		} else {
			f.body = append(f.body, p...)
		}
	}
	return p, nil
}

// EncodeEnd implements httpfilter.DataEncoder: the rules run on the whole
// body. A body over maxBody is treated as invalid JSON (on_error): Envoy
// would have failed the response at its buffer limit, which a response
// already on its way cannot be.
func (f *filter) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	m := f.c.response
	if f.over {
		f.c.resp.invalid.Inc()
		apply(f.s, m.allOnError())
		return nil, trailers, nil
	}
	process(f.s, m, f.body, &f.c.resp)
	f.body = nil
	return nil, trailers, nil
}

// KeepsLength implements httpfilter.LengthKeeper: the body is only read.
func (*filter) KeepsLength() bool { return true }

// headerValue is a header's value, "" when absent.
func headerValue(v string, _ bool) string { return v }
