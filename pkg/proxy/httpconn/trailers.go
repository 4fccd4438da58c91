package httpconn

import (
	"net/http"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
)

// Trailers cross the proxy as Envoy carries them: HTTP/2 trailers always,
// HTTP/1.1 trailers (the fields after a chunked body's last chunk) only
// where http_protocol_options.enable_trailers is set, on the connection
// manager for clients and on the cluster for upstreams. An HTTP/1.1
// message that is not chunked has nowhere to put them: they are dropped.

// appendTrailerSection ends a chunked HTTP/1.1 body: the last chunk, then
// the trailer fields (names in lower case, connection-specific ones left
// out) and the empty line. properCase writes the names as the head's.
func appendTrailerSection(b []byte, t http.Header, properCase bool) []byte {
	start := len(b)
	b = append(b, "0\r\n"...)
	for k, vs := range t {
		name := strings.ToLower(k)
		if connectionSpecific(name) || name == "te" || name == "content-length" {
			continue
		}
		for _, v := range vs {
			b = http1.AppendHeaderString(b, name, v)
		}
	}
	b = append(b, http1.CRLF...)
	if properCase {
		// The last chunk's line stands where the start line would.
		http1.ProperCaseNames(b[start:])
	}
	return b
}

// trailerHeader copies HTTP/1.1 trailer fields, views of a read buffer,
// into a header the other side can keep; nil when there are none.
func trailerHeader(fields http1.Headers) http.Header {
	if len(fields) == 0 {
		return nil
	}
	h := make(http.Header, len(fields))
	for _, f := range fields {
		name := string(f.Name)
		if connectionSpecific(name) || name == "te" || name == "content-length" {
			continue
		}
		h.Add(name, string(f.Value))
	}
	return h
}

// requestTrailers implements downstream: a chunked request's trailers,
// kept only with enable_trailers (see serveRequest).
func (c *serverConn) requestTrailers() http.Header {
	if !c.m.cfg.enableTrailers || !c.x.req.Chunked {
		return nil
	}
	return trailerHeader(c.x.body.Trailers())
}

// trailers implements downstream: kept for finish, which sends them after
// a chunked body with enable_trailers; dropped otherwise, as in Envoy.
func (c *serverConn) trailers(t http.Header) {
	if c.m.cfg.enableTrailers {
		c.x.trailer = t
	}
}

// mayEndWithTrailers reports whether the request body may end with
// trailers: always over HTTP/2, over HTTP/1 when the body is chunked and
// enable_trailers keeps its trailers, or when a filter may add some.
func (s *stream) mayEndWithTrailers() bool {
	return s.conn == nil || s.xbody != nil || s.upXbody != nil || (s.m.cfg.enableTrailers && s.reqChunked)
}

// requestTrailers implements downstream: the trailers that ended the
// request body, once the body has been read to its end.
func (st *h2Stream) requestTrailers() http.Header {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return st.reqTrailer
}

// requestTrailers implements downstream.
func (d *encodingDown) requestTrailers() http.Header { return d.inner.requestTrailers() }
