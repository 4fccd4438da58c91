package cache

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// filter is one request's cache filter.
type filter struct {
	c *filterConfig
	// key is the request's lookup key; "" when the request is not
	// served from the cache (and its response not stored).
	key  string
	head bool
	// allowInsert is false for a request with Cache-Control: no-store.
	allowInsert bool
	// serving is the fresh entry answering the request, with its age
	// and the part of it the request's Range asks for.
	serving *Entry
	age     time.Duration
	part    byteRange
	// ranged is a request with a Range header: its response, partial,
	// is not stored.
	ranged bool
	// validating is the stale entry the upstream is asked about, and
	// entryKey where it is stored.
	validating *Entry
	entryKey   string
}

var (
	_ httpfilter.Decoder = (*filter)(nil)
	_ httpfilter.Encoder = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: a fresh stored response
// answers the request; a stale one makes the request conditional.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.c
	if !servable(s) {
		return httpfilter.Continue
	}
	f.head = s.Request().Method == http.MethodHead
	req := requestCacheControl{maxAge: -1, minFresh: -1, maxStale: -1}
	if !c.ignoreRequestCC {
		h := s.RequestHeaders()
		cc, has := h.Get("cache-control")
		pragma, _ := h.Get("pragma")
		req = parseRequestCacheControl(cc, has, pragma)
	}
	_, f.ranged = s.RequestHeaders().Get("range")
	f.allowInsert = !req.noStore && !f.ranged
	f.key = c.key(s)
	e, key := f.lookup(s)
	if e == nil {
		return httpfilter.Continue
	}
	h := entryHeaders{e}
	date, _ := h.Get("date")
	d, hasDate := parseHTTPTime(date)
	ageHeader, _ := h.Get("age")
	now := c.now()
	age := currentAge(d, hasDate, ageHeader, e.ResponseTime, now)
	cc, _ := h.Get("cache-control")
	resp := parseResponseCacheControl(cc)
	if requiresValidation(req, resp, freshnessLifetime(resp, h), age) {
		f.validating, f.entryKey = e, key
		injectValidators(s, e)
		return httpfilter.Continue
	}
	f.serving, f.age, f.part = e, age, byteRange{whole: true}
	if f.ranged {
		rh, _ := s.RequestHeaders().Get("range")
		f.part = rangeOf(rh, len(e.Body))
	}
	// The head and body are put in place in EncodeHeaders, which the
	// reply runs through.
	s.SendLocalReply(e.Status, "", accesslog.ResponseFromCacheFilter, detailsFromCache)
	return httpfilter.Stop
}

// servable reports whether the request may be answered from the cache, as
// Envoy's canServeRequestFromCache: a GET or HEAD without a body, without
// Authorization and without the conditional headers Envoy leaves to the
// upstream (If-None-Match, If-Modified-Since, If-Range).
func servable(s httpfilter.Stream) bool {
	r := s.Request()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if _, has := s.RequestBody(); has {
		return false
	}
	if r.Path == "" || r.Host == "" || (r.Scheme != "http" && r.Scheme != "https") {
		return false
	}
	h := s.RequestHeaders()
	for _, name := range [...]string{"authorization", "if-none-match", "if-modified-since", "if-range"} {
		if _, has := h.Get(name); has {
			return false
		}
	}
	return true
}

// lookup finds the entry of the request, following a Vary marker to the
// response the request's headers select; nil when there is none.
func (f *filter) lookup(s httpfilter.Stream) (*Entry, string) {
	e, ok := f.c.store.Get(f.key)
	if !ok {
		return nil, ""
	}
	if e.VaryNames == nil {
		return e, f.key
	}
	vk, ok := f.c.varyKey(f.key, e.VaryNames, s)
	if !ok {
		return nil, ""
	}
	if e, ok = f.c.store.Get(vk); !ok || e.VaryNames != nil {
		return nil, ""
	}
	return e, vk
}

// injectValidators makes the request conditional on the stored response,
// as Envoy does: If-None-Match with its ETag, If-Modified-Since with its
// Last-Modified when that is a valid date, else with its Date.
func injectValidators(s httpfilter.Stream, e *Entry) {
	h := s.RequestHeaders()
	if etag, ok := e.get("etag"); ok {
		h.Set("if-none-match", etag)
	}
	if lm, ok := e.get("last-modified"); ok {
		if _, valid := parseHTTPTime(lm); valid {
			h.Set("if-modified-since", lm)
			return
		}
	}
	if date, ok := e.get("date"); ok {
		h.Set("if-modified-since", date)
	}
}

// EncodeHeaders implements httpfilter.Encoder: a hit's stored response
// replaces the local reply; a 304 to a validation serves the stored
// response with the 304's headers; a cacheable response is recorded.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	switch {
	case f.serving != nil:
		e := f.serving
		f.serving = nil
		f.serve(s, e)
		return httpfilter.Continue
	case f.key == "":
		return httpfilter.Continue
	case f.validating != nil && s.ResponseStatus() == http.StatusNotModified:
		f.validated(s)
		return httpfilter.Continue
	}
	if f.allowInsert && !f.head {
		f.record(s)
	}
	return httpfilter.Continue
}

// serve answers with a fresh entry, or the part of it the request's
// Range asks for (206, or 416 with no body).
func (f *filter) serve(s httpfilter.Stream, e *Entry) {
	p := f.part
	switch {
	case p.whole:
		replaceWith(s, e.Status, e.Header, e.Body)
	case p.unsatisfiable:
		replaceWith(s, http.StatusRequestedRangeNotSatisfiable, e.Header, nil)
		s.ResponseHeaders().Add("content-range", "bytes */"+strconv.Itoa(len(e.Body)))
	default:
		replaceWith(s, http.StatusPartialContent, e.Header, e.Body[p.begin:p.end])
		s.ResponseHeaders().Add("content-range", "bytes "+strconv.Itoa(p.begin)+"-"+strconv.Itoa(p.end-1)+"/"+strconv.Itoa(len(e.Body)))
	}
	s.ResponseHeaders().Set("age", strconv.FormatInt(int64(f.age/time.Second), 10))
}

// validated serves the stored response that a 304 confirmed: the 304's
// headers, and the stored ones it lacks (but Age: a validated response is
// as good as new), with the stored status and body. The stored entry
// takes the new headers unless the 304 names another ETag.
func (f *filter) validated(s httpfilter.Stream) {
	e := f.validating
	rh := s.ResponseHeaders()
	var merged [][2]string
	rangeHeaders(rh, func(name, value string) {
		merged = append(merged, [2]string{name, value})
	})
	for _, h := range e.Header {
		if h[0] == "age" {
			continue
		}
		if _, has := rh.Get(h[0]); !has {
			merged = append(merged, h)
		}
	}
	newETag, hasNew := rh.Get("etag")
	oldETag, hasOld := e.get("etag")
	update := !hasNew || (hasOld && oldETag == newETag)
	replaceWith(s, e.Status, merged, e.Body)
	s.AddResponseFlags(accesslog.ResponseFromCacheFilter)
	if d, ok := s.(httpfilter.DetailsSetter); ok {
		d.SetResponseCodeDetails(detailsFromCache)
	}
	if update {
		f.c.store.Put(f.entryKey, &Entry{Status: e.Status, Header: merged, Body: e.Body, ResponseTime: f.c.now()})
	}
}

// replaceWith puts a stored response in place of the one being encoded.
func replaceWith(s httpfilter.Stream, status int, header [][2]string, body []byte) {
	s.ReplaceResponse(status, string(body))
	rh := s.ResponseHeaders()
	rh.Del("content-type")
	for _, h := range header {
		rh.Add(h[0], h[1])
	}
}

// rangeHeaders calls fn with each response header field but the framing
// ones, which the connection manager sets itself. The strings are copies:
// the connection manager's may share its buffers, reused by the next
// request, and these outlive it in the cache.
func rangeHeaders(h any, fn func(name, value string)) {
	r, ok := h.(interface {
		Range(fn func(name, value string) bool)
	})
	if !ok {
		return
	}
	r.Range(func(name, value string) bool {
		switch name {
		case "content-length", "transfer-encoding", "connection", "keep-alive":
		default:
			fn(strings.Clone(name), strings.Clone(value))
		}
		return true
	})
}

// record stores the response if it is cacheable, once its body has
// passed.
func (f *filter) record(s httpfilter.Stream) {
	c := f.c
	rh := s.ResponseHeaders()
	if !c.cacheableResponse(s.ResponseStatus(), rh) {
		return
	}
	names, ok := c.varyNames(rh)
	if !ok {
		return
	}
	key := f.key
	if names != nil {
		if key, ok = c.varyKey(f.key, names, s); !ok {
			return
		}
	}
	r := &recorder{
		c:       c,
		baseKey: f.key,
		key:     key,
		vary:    names,
		entry:   Entry{Status: s.ResponseStatus()},
		limit:   c.store.Limit(),
	}
	if c.maxBody > 0 && c.maxBody < r.limit {
		r.limit = c.maxBody
	}
	rangeHeaders(rh, func(name, value string) {
		r.entry.Header = append(r.entry.Header, [2]string{name, value})
	})
	n, has := s.ResponseBody()
	switch {
	case !has || n == 0:
		r.store()
	case n > int64(r.limit):
		// Too large to be stored: not worth copying.
	default:
		s.TransformResponseBody(r)
	}
}

// cacheableResponse reports whether a response may be stored, as Envoy's
// isCacheableResponse: a cacheable status, no no-store or private, and
// enough to compute its freshness (no-cache, max-age or s-maxage, or
// both Date and Expires). Vary is checked apart.
func (c *filterConfig) cacheableResponse(status int, h headerGetter) bool {
	cc, _ := h.Get("cache-control")
	rc := parseResponseCacheControl(cc)
	_, hasDate := h.Get("date")
	_, hasExpires := h.Get("expires")
	return !rc.noStore && cacheableStatus(status) && (rc.mustValidate || rc.maxAge >= 0 || (hasDate && hasExpires))
}

// recorder copies a response body on its way to the client, and stores
// the response at its end: not if the body grows past limit, nor if the
// response has trailers.
type recorder struct {
	c       *filterConfig
	baseKey string
	key     string
	vary    []string
	entry   Entry
	limit   int
	over    bool
}

var _ httpfilter.LengthKeeper = (*recorder)(nil)

// KeepsLength implements httpfilter.LengthKeeper: the recorder only
// copies the body, which keeps its Content-Length.
func (r *recorder) KeepsLength() bool { return true }

// EncodeData implements httpfilter.DataEncoder: the piece goes on as it
// came.
func (r *recorder) EncodeData(p []byte) ([]byte, error) {
	if !r.over {
		if len(r.entry.Body)+len(p) > r.limit {
			r.over, r.entry.Body = true, nil
		} else {
			r.entry.Body = append(r.entry.Body, p...)
		}
	}
	return p, nil
}

// EncodeEnd implements httpfilter.DataEncoder.
func (r *recorder) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if !r.over && len(trailers) == 0 {
		r.store()
	}
	return nil, trailers, nil
}

// store puts the recorded response in the cache, after the Vary marker
// of its resource when it has one.
func (r *recorder) store() {
	now := r.c.now()
	if r.vary != nil {
		r.c.store.Put(r.baseKey, &Entry{VaryNames: r.vary, ResponseTime: now})
	}
	e := r.entry
	e.ResponseTime = now
	r.c.store.Put(r.key, &e)
}
