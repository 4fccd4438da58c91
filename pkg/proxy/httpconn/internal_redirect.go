package httpconn

import (
	"net/http"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Internal redirects (a route's internal_redirect_policy): an upstream
// response with one of the policy's codes is not relayed; the request goes
// again, to the Location, through the whole filter chain and the router,
// as Envoy's router asks its connection manager to recreate the stream.
// The client sees one request and one response, and so do the access log
// and the tracing: the stream is the same, its routing starts over.

// redirectStats are the router's counts of the redirects a policy would
// follow but passed to the client (Envoy's passthrough_internal_redirect_*
// router stats, in the connection manager's scope).
type redirectStats struct {
	badLocation, unsafeScheme, tooMany, noRoute, predicate *stats.Counter
}

func newRedirectStats(sc stats.Scope) *redirectStats {
	return &redirectStats{
		badLocation:  sc.Counter("passthrough_internal_redirect_bad_location"),
		unsafeScheme: sc.Counter("passthrough_internal_redirect_unsafe_scheme"),
		tooMany:      sc.Counter("passthrough_internal_redirect_too_many_redirects"),
		noRoute:      sc.Counter("passthrough_internal_redirect_no_route"),
		predicate:    sc.Counter("passthrough_internal_redirect_predicate"),
	}
}

// redirectState is a request's internal redirect bookkeeping.
type redirectState struct {
	// st is what the policy's count and predicates keep across the
	// request's redirects.
	st router.RedirectState
	// pending: the attempt's response is followed; the stream's routing
	// starts over once forward returns.
	pending bool
	// hadBody: the request, as this pass forwards it, has a body.
	hadBody bool
	// body is the request body the next pass replays (empty: none),
	// src reads it (see filter_body.go); saved is the request's fields before a redirect
	// changed them, put back when it cannot be followed.
	body  []byte
	src   replayBody
	saved []field
	// dispatching: a pass of the filters and the router runs on the
	// stream's goroutine, which may drop a response head it has not
	// sent (see recreate.go).
	dispatching bool
	// recreating: an encoder filter recreated the stream; sendHead
	// drops the head it is sending.
	recreating bool
}

// reset forgets the previous request's redirects, keeping the buffers.
func (r *redirectState) reset() {
	if r.st.Empty() && !r.pending && !r.hadBody {
		return
	}
	body, saved := r.body[:0], r.saved[:0]
	if cap(body) > maxKeptBody {
		body = nil
	}
	clear(saved[:cap(saved)])
	*r = redirectState{body: body, saved: saved}
}

// keepRedirectBody keeps the request body for a redirect the route may
// follow, as Envoy's router buffers it (up to the buffer limit; past it,
// redirects pass through). A body kept for retries serves both.
func (s *stream) keepRedirectBody() {
	if s.route.InternalRedirect == nil {
		return
	}
	s.redir.hadBody = s.body != nil
	if s.body != nil && s.retry.body == nil {
		// reset must clear the kept body with the rest.
		s.retry.used = true
		s.keepBodyForRetries()
	}
}

// followsRedirect decides, once an attempt's response head has come
// (status, fields in s.respHeaders), whether the route's policy follows
// it; when it does, the request is readied for its next pass and the
// caller drops the response. A code of the policy that cannot be followed
// counts as a failure and passes through.
func (s *stream) followsRedirect(cl UpstreamCluster, status int) bool {
	p := s.route.InternalRedirect
	if p == nil || !p.Follows(status) || s.upg.typ != "" {
		return false
	}
	if dl, ok := s.m.routerDebug.Debug(); ok && dl.Enabled() {
		dl.Info("attempting internal redirect")
	}
	if s.setupRedirect(p, status) {
		cl.Stats().InternalRedirectSucceeded().Inc()
		return true
	}
	cl.Stats().InternalRedirectFailed().Inc()
	return false
}

// redirectHTTP2 is followsRedirect for an HTTP/2 upstream's response
// head: a followed response is dropped, and the request body taken back
// from the transport.
func (s *stream) redirectHTTP2(cl UpstreamCluster, resp *http.Response, body *h2RequestBody) bool {
	if !s.route.InternalRedirect.Follows(resp.StatusCode) {
		return false
	}
	s.copyHTTP2ResponseHeaders(resp)
	s.status = resp.StatusCode
	followed := s.followsRedirect(cl, resp.StatusCode)
	// relayHTTP2 copies them again when the response is relayed.
	s.respHeaders.reset()
	if followed {
		s.outlierResponse()
		body.takeBack()
		_ = resp.Body.Close()
	}
	return followed
}

// setupRedirect is Envoy's setupRedirect and
// convertRequestHeadersForInternalRedirect: the request must have come
// whole, its body kept, the Location must be an absolute URL of an
// allowed scheme, the count below the policy's maximum, the new request
// must match a route, and the predicates must accept that route.
func (s *stream) setupRedirect(p *router.InternalRedirectPolicy, status int) bool {
	r := &s.redir
	if r.hadBody {
		b := s.retry.body
		if b == nil || !b.done.Load() || b.over {
			// Not read whole yet, or too large to keep.
			return false
		}
		r.body = append(r.body[:0], b.buf...)
	} else {
		r.body = r.body[:0]
	}
	loc, ok := s.respHeaders.Get("location")
	if !ok || s.path == "" {
		return false
	}
	st := s.m.stats.redirects
	target, ok := router.ParseRedirectLocation(loc)
	if !ok {
		st.badLocation.Inc()
		return false
	}
	downHTTPS := s.scheme == "https" && s.tls != nil
	targetHTTPS := target.Scheme == "https"
	if !p.AllowCrossScheme && downHTTPS != targetHTTPS {
		st.unsafeScheme.Inc()
		return false
	}
	if r.st.Count >= p.MaxRedirects {
		st.tooMany.Inc()
		return false
	}
	// The route is matched with the new request: its fields (the
	// response's copied in) and its target. They are put back when the
	// redirect is not followed.
	r.saved = append(r.saved[:0], s.reqHeaders.fields...)
	s.copyRedirectHeaders(p.HeadersToCopy)
	// The copy shares the request's random value (runtime_fraction).
	s.rreq.RandomValue()
	req := s.rreq
	req.Scheme, req.Host, req.Path = target.Scheme, target.Authority, target.Path
	req.DynamicMetadata, req.FilterState = s.entry.DynamicMetadata, s.entry.FilterState
	req.ConnFilterState = s.entry.ConnFilterState
	to := s.routes().table.MatchRequest(&req)
	if to == nil {
		st.noRoute.Inc()
		s.restoreRequestFields()
		return false
	}
	for _, pr := range p.Predicates {
		if !pr.Accept(&r.st, to.Name, downHTTPS, targetHTTPS) {
			st.predicate.Inc()
			if dl, ok := s.m.routerDebug.Debug(); ok && dl.Enabled() {
				dl.Info("internal redirect failed: rejecting redirect targeting " + to.Name + ", by " + pr.Name() + " predicate")
			}
			s.restoreRequestFields()
			return false
		}
	}
	r.st.Count++
	scheme := "http"
	if downHTTPS {
		scheme = "https"
	}
	// The request as it went upstream, as Envoy's router left its
	// headers.
	s.reqHeaders.Set("x-envoy-original-url", scheme+"://"+s.upAuthority+s.upPath)
	method := s.method
	if status == 303 && method != "GET" && method != "HEAD" {
		// RFC 9110 §15.4.4: the next request is a GET, without the body.
		method = "GET"
		r.body, r.hadBody = r.body[:0], false
	}
	s.method, s.scheme = method, strings.Clone(target.Scheme)
	s.path, s.authority = strings.Clone(target.Path), strings.Clone(target.Authority)
	r.pending = true
	return true
}

// copyRedirectHeaders puts the response's fields named in
// response_headers_to_copy in the request in place of its own: a name the
// response lacks is removed from the request.
func (s *stream) copyRedirectHeaders(names []string) {
	for _, name := range names {
		s.reqHeaders.Del(name)
		for i := range s.respHeaders.fields {
			if f := &s.respHeaders.fields[i]; f.name == name {
				// A copy: the response's fields view the upstream's
				// buffer.
				s.reqHeaders.Add(name, strings.Clone(f.value))
			}
		}
	}
}

// restoreRequestFields puts back the request's fields setupRedirect saved.
func (s *stream) restoreRequestFields() {
	h := &s.reqHeaders
	h.fields = append(h.fields[:0], s.redir.saved...)
	h.edits++
	clear(s.redir.saved)
}

// recreate readies the stream for the pass that follows an internal
// redirect: the filters and the routing of the previous pass are
// forgotten, the request is the redirected one, its body the one kept.
// What the client is told about (the stream's start, its span, its
// access log entry) stays.
func (s *stream) recreate() {
	r := &s.redir
	r.pending, r.recreating = false, false
	s.untransform()
	s.destroyUpstreamFilters()
	s.destroyFilters()
	s.route, s.cluster, s.host = nil, nil, nil
	s.routed, s.cached, s.clusterName, s.wc = false, nil, "", -1
	clear(s.setCookies)
	s.setCookies = s.setCookies[:0]
	s.attemptCountInResponse = false
	s.retry.reset()
	s.vcStats, s.rtStats = nil, nil
	s.upPath, s.upAuthority, s.rqTimeout = "", "", 0
	s.status = 0
	s.respHeaders.reset()
	s.respLength, s.respHasBody, s.replaced = 0, false, false
	s.respTrailers = nil
	s.flags, s.details = 0, ""
	s.upSent = time.Time{}
	s.bodyErr.Store(nil)
	s.isHead = s.method == "HEAD"
	s.expect100 = false
	s.rreq.Method, s.rreq.Scheme, s.rreq.Host, s.rreq.Path = s.method, s.scheme, s.authority, s.path
	s.entry.Method, s.entry.Path, s.entry.Authority, s.entry.Scheme = s.method, s.path, s.authority, s.scheme
	if r.hadBody {
		// The kept body was counted as it came; the replay is not
		// counted again.
		r.src = replayBody{s: s, buf: r.body, done: true, counted: len(r.body)}
		s.body = &r.src
		s.reqLength, s.reqChunked = int64(len(r.body)), false
	} else {
		s.body = nil
		s.reqLength, s.reqChunked = -1, false
	}
	s.tLast = time.Now()
}
