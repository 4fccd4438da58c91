package httpconn

import (
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Upstream HTTP filters (Envoy's upstream filter chain): the cluster's
// http_protocol_options.http_filters, else the router's
// upstream_http_filters. The chain runs on each attempt, once its host is
// picked (a retry or a hedged attempt runs it again), on the request head
// as it goes upstream: after the router's own edits (route header
// mutations, x-envoy-attempt-count), in place, so that, as in Envoy, what
// one attempt's filters changed is what the next attempt's start from.
// The response head the attempt brings back runs through the chain in
// reverse order before the router's response edits and the downstream
// filters, by the filters of that attempt: each attempt has its own
// (a hedged request's too), ended when the attempt ends. A shadow (request_mirror_policies) runs the chain of its
// cluster (else the router's) on its copy of the request. A request the
// route terminates as a CONNECT tunnel does not run it, as in Envoy.
//
// An upstream filter may buffer the request body (BufferRequestBody), for
// its attempt (see upstream_body.go): a body over its limit is answered
// 413 without counting downstream_rq_too_large, as Envoy's upstream
// filter manager does. It may answer the request (SendLocalReply, then
// Stop), as Envoy's upstream filters' local replies go to the downstream
// filter manager: the attempt sends nothing, is not retried, and a
// hedged request's other attempts are reset; the reply goes through the
// connection manager's filters as the router's own replies do, not
// through the upstream chain.

// upstreamRouter is the router configuration's upstream chain.
type upstreamRouter interface {
	UpstreamFilters() *httpfilter.UpstreamChain
}

// upstreamFilterer is a cluster with its own upstream chain.
type upstreamFilterer interface {
	UpstreamFilters() *httpfilter.UpstreamChain
}

// upstreamChain is the upstream chain of an attempt on cl (the route's
// cluster): the cluster's, else the router's; nil without one.
func (s *stream) upstreamChain(cl UpstreamCluster) *httpfilter.UpstreamChain {
	if uf, ok := cl.(upstreamFilterer); ok {
		if c := uf.UpstreamFilters(); c != nil {
			return c
		}
	}
	return s.filterChain().upstream
}

// decodeUpstream runs the attempt's upstream chain on the request head,
// in order: each filter made for this attempt (Envoy makes an upstream
// filter chain per upstream request), kept for the response and
// destroyed when the attempt ends (see destroyUpstreamFilters). It
// returns false when a filter answered the request (it returned Stop).
func (s *stream) decodeUpstream(route *router.Route) bool {
	s.destroyUpstreamFilters()
	c := s.upstreamChain(s.cluster)
	if c == nil || route.TerminatesTunnel(s.method, s.upg.connect) || (s.upg.connectUDP && route.TerminatesConnectUDP()) {
		return true
	}
	us := upstreamStream{s}
	for i := range c.Filters {
		f := c.Filters[i].Config.NewFilter()
		s.upFilters = append(s.upFilters, f)
		if d, ok := f.(httpfilter.Decoder); ok && d.DecodeHeaders(us) == httpfilter.Stop {
			if !s.started && !s.abandoned && s.status == 0 {
				// A filter must answer what it stops (see
				// decodeFilters).
				s.localReply(500, "", 0, "filter_stopped_without_reply")
			}
			s.upXform = s.upXform[:0]
			return false
		}
	}
	s.transformAttempt()
	return true
}

// destroyUpstreamFilters ends the filters of the attempt the stream
// holds (Envoy's onDestroy of an upstream request's filters), once the
// attempt is over: answered, relayed, failed, retried or reset. A hedged
// attempt's filters go with its hedgeTry instead (see hedge.go).
func (s *stream) destroyUpstreamFilters() {
	destroyAttemptFilters(s.upFilters)
	s.upFilters = s.upFilters[:0]
}

// takeUpstreamFilters hands the filters of the attempt just begun to its
// hedgeTry, which destroys them when the race is done with it.
func (s *stream) takeUpstreamFilters() []httpfilter.Filter {
	fs := s.upFilters
	s.upFilters = nil
	return fs
}

// destroyAttemptFilters tells an attempt's filters that it has ended,
// last first as Envoy's filter manager destroys them, and forgets them.
func destroyAttemptFilters(fs []httpfilter.Filter) {
	for i := len(fs) - 1; i >= 0; i-- {
		if d, ok := fs[i].(httpfilter.Destroyer); ok {
			d.OnDestroy()
		}
		fs[i] = nil
	}
}

// upstreamStream is the stream as an attempt's upstream filters see it:
// the request as it goes upstream (path and authority after the route's
// rewrites, which their own edits change), and the attempt's body.
type upstreamStream struct{ *stream }

// Request implements httpfilter.Stream: the request as it goes upstream.
func (u upstreamStream) Request() *router.Request {
	// The copy shares the request's random value (runtime_fraction).
	u.rreq.RandomValue()
	u.upReq = u.rreq
	u.upReq.Path, u.upReq.Host = u.upPath, u.upAuthority
	return &u.upReq
}

// SetPath implements httpfilter.Stream: the :path sent upstream.
func (u upstreamStream) SetPath(path string) {
	u.upPath = path
	u.entry.Path = path
}

// SetAuthority implements httpfilter.Stream: the :authority sent
// upstream.
func (u upstreamStream) SetAuthority(host string) {
	u.upAuthority = host
	u.entry.Authority = host
}

// SendLocalReply implements httpfilter.Stream for an upstream filter
// (the last one the attempt made, whose DecodeHeaders is running): the
// reply goes through the connection manager's filters, after the
// answering filter's own edit of its head (httpfilter.ReplyEncoder), as
// Envoy's upstream local replies carry the answering filter's
// modify_headers.
func (u upstreamStream) SendLocalReply(status int, body string, flags accesslog.ResponseFlags, details string) {
	u.answer(status, -1, body, flags, details)
}

// SendGrpcLocalReply implements httpfilter.Stream for an upstream filter
// (see SendLocalReply).
func (u upstreamStream) SendGrpcLocalReply(status int, grpcStatus uint32, body string, flags accesslog.ResponseFlags, details string) {
	u.answer(status, int64(grpcStatus), body, flags, details)
}

// answer sends the local reply of the upstream filter being decoded; a
// negative grpcStatus derives it from status.
func (u upstreamStream) answer(status int, grpcStatus int64, body string, flags accesslog.ResponseFlags, details string) {
	if n := len(u.upFilters); n > 0 {
		u.upAnswering = u.upFilters[n-1]
	}
	u.localReplyGrpc(status, grpcStatus, body, flags, details)
	u.upAnswering = nil
}

// encodeUpstreamReply lets the upstream filter f edit the head of its
// own local reply (see upstreamStream.SendLocalReply).
func (s *stream) encodeUpstreamReply(f httpfilter.Filter) {
	s.upAnswering = nil
	if e, ok := f.(httpfilter.ReplyEncoder); ok {
		e.EncodeReplyHeaders(upstreamStream{s})
	}
}

// ClearRouteCache implements httpfilter.Stream: nothing, as for Envoy's
// upstream filters, which have no downstream callbacks to clear the
// route with; the route was used already.
func (upstreamStream) ClearRouteCache() {}

// BufferRequestBody implements httpfilter.Stream for an upstream filter.
func (u upstreamStream) BufferRequestBody(limit int, partial bool) (body []byte, complete, ok bool) {
	return u.bufferBody(limit, partial, true)
}

// TransformRequestBody implements httpfilter.Stream for an upstream
// filter: d decodes the attempt's body (see upstream_body.go).
func (u upstreamStream) TransformRequestBody(d httpfilter.DataDecoder) {
	if u.body != nil && d != nil {
		u.upXform = append(u.upXform, d)
	}
}

// StartRequestSource implements httpfilter.SourceStarter for an upstream
// filter: not there (the attempt's body is read once the attempt
// starts).
func (upstreamStream) StartRequestSource(httpfilter.SourceDecoder) bool { return false }

// shadowFilterStream is the stream as a shadow's upstream filters see it:
// the shadow's own copy of the request headers. Its body is the copy sent
// once the request has arrived whole: a filter that buffers it sets the
// shadow's limit, and one that answers drops the shadow, whose answers
// nobody reads.
type shadowFilterStream struct {
	*stream
	h  *headerList
	sh *shadow
}

// RequestHeaders implements httpfilter.Stream: the shadow's headers.
func (f shadowFilterStream) RequestHeaders() router.HeaderEditor { return f.h }

// Request implements httpfilter.Stream: the shadow's request.
func (f shadowFilterStream) Request() *router.Request {
	f.rreq.RandomValue()
	f.upReq = f.rreq
	f.upReq.Path, f.upReq.Host, f.upReq.Headers = f.sh.path, f.sh.authority, f.h
	return &f.upReq
}

// SetPath implements httpfilter.Stream: the shadow's :path.
func (f shadowFilterStream) SetPath(path string) { f.sh.path = strings.Clone(path) }

// SetAuthority implements httpfilter.Stream: the shadow's :authority.
func (f shadowFilterStream) SetAuthority(host string) { f.sh.authority = strings.Clone(host) }

// ClearRouteCache implements httpfilter.Stream: nothing (see
// upstreamStream).
func (shadowFilterStream) ClearRouteCache() {}

// StartRequestSource implements httpfilter.SourceStarter for a shadow's
// filter: not there.
func (shadowFilterStream) StartRequestSource(httpfilter.SourceDecoder) bool { return false }

// TransformRequestBody implements httpfilter.Stream for a shadow: the
// copy's body goes as it was kept; the decoder's trailers
// (httpfilter.TrailerDecoder) are the copy's. The upstream-capable
// filters' decoders only edit trailers (see httpfilter.UpstreamCapable).
func (f shadowFilterStream) TransformRequestBody(d httpfilter.DataDecoder) {
	if td, ok := d.(httpfilter.TrailerDecoder); ok && f.body != nil {
		f.sh.trailerDecs = append(f.sh.trailerDecs, td)
	}
}

// BufferRequestBody implements httpfilter.Stream for a shadow: the body
// is not there yet. Without partial, a body longer than limit is the
// filter's 413, which drops the shadow when it would go out; the filter
// is given no bytes, and goes on.
func (f shadowFilterStream) BufferRequestBody(limit int, partial bool) (body []byte, complete, ok bool) {
	if !partial && (f.sh.bodyLimit < 0 || limit < f.sh.bodyLimit) {
		f.sh.bodyLimit = limit
	}
	return nil, false, true
}

// SendLocalReply implements httpfilter.Stream for a shadow: it is not
// sent.
func (f shadowFilterStream) SendLocalReply(status int, _ string, _ accesslog.ResponseFlags, _ string) {
	f.sh.answered = status
}

// SendGrpcLocalReply implements httpfilter.Stream for a shadow: it is not
// sent.
func (f shadowFilterStream) SendGrpcLocalReply(status int, _ uint32, _ string, _ accesslog.ResponseFlags, _ string) {
	f.sh.answered = status
}

// decodeShadow runs an upstream chain on a shadow's request headers; the
// shadow's response is not relayed, so the chain never encodes. It
// returns false when a filter answered: the shadow is not sent.
func (s *stream) decodeShadow(c *httpfilter.UpstreamChain, sh *shadow) bool {
	fs := shadowFilterStream{stream: s, h: &sh.headers, sh: sh}
	for i := range c.Filters {
		f := c.Filters[i].Config.NewFilter()
		stop := false
		if d, ok := f.(httpfilter.Decoder); ok {
			stop = d.DecodeHeaders(fs) == httpfilter.Stop
		}
		if d, ok := f.(httpfilter.Destroyer); ok {
			// The shadow's filters see only its request head.
			d.OnDestroy()
		}
		if stop {
			if sh.answered == 0 {
				sh.answered = 500
			}
			return false
		}
	}
	return sh.answered == 0
}

// encodeUpstream runs the attempt's upstream filters on the response
// head it brought back, in reverse order.
func (s *stream) encodeUpstream() {
	us := upstreamStream{s}
	for i := len(s.upFilters) - 1; i >= 0; i-- {
		if e, ok := s.upFilters[i].(httpfilter.Encoder); ok {
			e.EncodeHeaders(us)
		}
	}
}
