package compressor

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// filter is one request's compressor filter.
type filter struct {
	cfg *filterConfig
	// acceptEncoding is the request's Accept-Encoding, captured before it
	// may be removed; hasAccept whether it had one.
	acceptEncoding string
	hasAccept      bool
	perRoute       *routeConfig
	chain          *chainState
	req, resp      compression.Compressor
	// reqData decodes the request body through req.
	reqData requestData
}

var (
	_ httpfilter.Decoder     = (*filter)(nil)
	_ httpfilter.Encoder     = (*filter)(nil)
	_ httpfilter.DataEncoder = (*filter)(nil)
	_ httpfilter.Destroyer   = (*filter)(nil)
)

// chainKey keys the request's chainState in StreamState.
type chainKey struct{}

// chainState is what the compressor filters of one request share, as
// Envoy's per-stream filter state: the filters of the chain, in order,
// and the encoding they chose.
type chainState struct {
	entries  []chainEntry
	decided  bool
	decision decision
}

// chainEntry is one compressor filter of the chain: its configuration
// and the content-encoding it offers on this request's route (its
// library's, or the route's overrides.compressor_library's).
type chainEntry struct {
	cfg      *filterConfig
	encoding string
}

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.cfg
	h := s.RequestHeaders()
	f.acceptEncoding, f.hasAccept = h.Get("accept-encoding")
	if rc, ok := s.RouteConfig(c.name).(*routeConfig); ok {
		f.perRoute = rc
	}
	if f.responseEnabled() && f.removeAcceptEncoding() {
		h.Del("accept-encoding")
	}
	f.chain = s.StreamState(chainKey{}, func() any { return &chainState{} }).(*chainState)
	f.chain.entries = append(f.chain.entries, chainEntry{cfg: c, encoding: f.encoding()})

	n, hasBody := s.RequestBody()
	rq := &c.request
	if hasBody && c.hasRequest && rq.enabled() && rq.minimumLength(n) &&
		rq.typeAllowed(h.Get("content-type")) && !has(h, "content-encoding") {
		h.Set("content-encoding", f.encoding())
		rq.compressed.Inc()
		f.req = f.library().NewCompressor()
		f.reqData = requestData{f: f}
		s.TransformRequestBody(&f.reqData)
	} else {
		rq.notCompressed.Inc()
	}
	return httpfilter.Continue
}

// library is the compressor library of this request: the route's
// overrides.compressor_library, else the filter's.
func (f *filter) library() compression.CompressorConfig {
	if f.perRoute != nil && f.perRoute.library != nil {
		return f.perRoute.library
	}
	return f.cfg.library
}

// encoding is the content-encoding of library().
func (f *filter) encoding() string {
	if f.perRoute != nil && f.perRoute.library != nil {
		return f.perRoute.encoding
	}
	return f.cfg.encoding
}

// responseEnabled reports whether responses are compressed: the route's
// override, else the filter's runtime flag.
func (f *filter) responseEnabled() bool {
	if f.perRoute != nil && f.perRoute.hasEnabled {
		return f.perRoute.enabled
	}
	return f.cfg.response.enabled()
}

// removeAcceptEncoding is remove_accept_encoding_header, the route's
// override first.
func (f *filter) removeAcceptEncoding() bool {
	if f.perRoute != nil && f.perRoute.hasRemove {
		return f.perRoute.removeAcceptEncoding
	}
	return f.cfg.removeAcceptEncoding
}

// EncodeHeaders implements httpfilter.Encoder: the decision, in Envoy's
// order of checks (which decides the stats a response counts).
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.cfg
	h := s.ResponseHeaders()
	n, hasBody := s.ResponseBody()
	rd := &c.response
	enabled := f.responseEnabled()
	bigEnough := enabled && rd.minimumLength(n)
	compressible, skipped := bigEnough, ""
	switch {
	case !enabled:
	case !bigEnough:
		skipped = "ContentLengthTooSmall"
	case !rd.typeAllowed(h.Get("content-type")):
		compressible, skipped = false, "ContentTypeNotAllowed"
	case noTransform(h):
		compressible = false
	case !f.etagAllowed(h):
		compressible, skipped = false, "EtagNotAllowed"
	case has(h, "content-encoding"):
		compressible = false
	case c.uncompressible[s.ResponseStatus()]:
		compressible, skipped = false, "StatusCodeNotAllowed"
	}
	if hasBody && f.acceptEncodingAllowed(bigEnough, h) && compressible {
		if c.statusHeader {
			status := f.encoding() + ";Compressed"
			// The response's content-length, which the connection
			// manager keeps as the body's known length (-1: none).
			if n >= 0 {
				status += ";OriginalLength=" + strconv.FormatInt(n, 10)
			}
			appendStatus(h, status)
		}
		f.sanitizeEtag(h)
		h.Set("content-encoding", f.encoding())
		rd.compressed.Inc()
		f.resp = f.library().NewCompressor()
		s.TransformResponseBody(f)
	} else {
		rd.notCompressed.Inc()
		if c.statusHeader && skipped != "" {
			appendStatus(h, f.encoding()+";"+skipped)
		}
	}
	if compressible {
		// A cache in front must know that the representation varies,
		// compressed or not this time.
		insertVary(h)
	}
	return httpfilter.Continue
}

// appendStatus adds one compressor's status to x-envoy-compression-status:
// each compressor filter of the chain appends its own, comma-separated.
func appendStatus(h headers, status string) {
	if v, ok := h.Get("x-envoy-compression-status"); ok && v != "" {
		status = v + "," + status
	}
	h.Set("x-envoy-compression-status", status)
}

// etagAllowed reports whether an ETag lets the response be compressed,
// counting not_compressed_etag when it does not.
func (f *filter) etagAllowed(h headers) bool {
	if f.cfg.disableOnEtag && has(h, "etag") {
		f.cfg.notCompressedEtag.Inc()
		return false
	}
	return true
}

// sanitizeEtag drops a strong ETag, which no longer names the bytes sent
// (or makes it weak with weaken_etag_on_compress); a weak one stays.
func (f *filter) sanitizeEtag(h headers) {
	v, ok := h.Get("etag")
	if !ok || len(v) <= 2 || ((v[0] == 'w' || v[0] == 'W') && v[1] == '/') {
		return
	}
	if f.cfg.weakenEtag {
		h.Set("etag", "W/"+v)
		return
	}
	h.Del("etag")
}

// noTransform reports Cache-Control: no-transform.
func noTransform(h headers) bool {
	v, ok := h.Get("cache-control")
	if !ok {
		return false
	}
	for _, tok := range strings.Split(v, ",") {
		if strings.EqualFold(strings.TrimSpace(tok), "no-transform") {
			return true
		}
	}
	return false
}

// insertVary adds Accept-Encoding to Vary, once.
func insertVary(h headers) {
	v, ok := h.Get("vary")
	if !ok {
		h.Set("vary", "Accept-Encoding")
		return
	}
	for _, tok := range strings.Split(v, ",") {
		if strings.EqualFold(strings.TrimSpace(tok), "accept-encoding") {
			return
		}
	}
	h.Set("vary", v+", Accept-Encoding")
}

// EncodeData implements httpfilter.DataEncoder.
func (f *filter) EncodeData(p []byte) ([]byte, error) {
	rd := &f.cfg.response
	rd.uncompressedBytes.Add(uint64(len(p)))
	out, err := f.resp.Compress(p)
	rd.compressedBytes.Add(uint64(len(out)))
	return out, err
}

// EncodeEnd implements httpfilter.DataEncoder.
func (f *filter) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	out, err := f.resp.Finish()
	f.cfg.response.compressedBytes.Add(uint64(len(out)))
	return out, trailers, err
}

// requestData compresses the request body.
type requestData struct{ f *filter }

// DecodeData implements httpfilter.DataDecoder.
func (r *requestData) DecodeData(p []byte) ([]byte, error) {
	rq := &r.f.cfg.request
	rq.uncompressedBytes.Add(uint64(len(p)))
	out, err := r.f.req.Compress(p)
	rq.compressedBytes.Add(uint64(len(out)))
	return out, err
}

// DecodeEnd implements httpfilter.DataDecoder.
func (r *requestData) DecodeEnd() ([]byte, error) {
	out, err := r.f.req.Finish()
	r.f.cfg.request.compressedBytes.Add(uint64(len(out)))
	return out, err
}

// OnDestroy implements httpfilter.Destroyer: the compressors go back to
// their pools, the filter to its own.
func (f *filter) OnDestroy() {
	if f.req != nil {
		f.req.Release()
	}
	if f.resp != nil {
		f.resp.Release()
	}
	c := f.cfg
	*f = filter{cfg: c}
	c.pool.Put(f)
}
