package httpconn

import (
	"strings"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcstatus"
)

// The bodies of Envoy's local replies, word for word, so that clients and
// tests written against Envoy see the same text.
const (
	bodyNoHealthyUpstream    = "no healthy upstream"
	bodyConnectFailure       = "upstream connect error or disconnect/reset before headers. reset reason: connection failure"
	bodyLocalConnectFailure  = "upstream connect error or disconnect/reset before headers. reset reason: local connection failure"
	bodyRemoteConnectFailure = "upstream connect error or disconnect/reset before headers. reset reason: remote connection failure"
	bodyConnectTimeout       = "upstream connect error or disconnect/reset before headers. reset reason: connection timeout"
	bodyTermination          = "upstream connect error or disconnect/reset before headers. reset reason: connection termination"
	bodyProtocolError        = "upstream connect error or disconnect/reset before headers. reset reason: protocol error"
	bodyRemoteReset          = "upstream connect error or disconnect/reset before headers. reset reason: remote reset"
	bodyOverflow             = "upstream connect error or disconnect/reset before headers. reset reason: overflow"
	bodyUpstreamTimeout      = "upstream request timeout"
	bodyStreamTimeout        = "stream timeout"
	bodyRequestTimeout       = "request timeout"
	bodyHeaderTimeout        = "request header timeout"
	// bodyOverloaded keeps Envoy's own word: clients match on it.
	bodyOverloaded   = "envoy overloaded"
	bodyDropOverload = "drop overload"
)

// localReply answers the request from the proxy itself, with Envoy's
// headers for local replies: content-type text/plain when there is a body,
// and the route's response header edits when a route was chosen. A gRPC
// request gets the gRPC form, with a grpc-status derived from status. If
// the response has already started, the stream can only be cut.
func (s *stream) localReply(status int, body string, flags accesslog.ResponseFlags, details string) {
	s.localReplyGrpc(status, -1, body, flags, details)
}

// localReplyGrpc is localReply with the grpc-status a gRPC request gets;
// a negative grpcStatus derives it from status.
func (s *stream) localReplyGrpc(status int, grpcStatus int64, body string, flags accesslog.ResponseFlags, details string) {
	s.localReplyAs(status, grpcStatus, body, flags, details, "", "")
}

// localReplyAs is localReplyGrpc; dropHeader names the header, set to
// "true", that marks a request the router dropped (x-envoy-overloaded for
// a circuit breaker's refusal, x-envoy-drop-overload for drop_overloads),
// "" for none; it is left out when the router suppresses Envoy's headers,
// as Envoy's router adds it. contentType, when not "", is set before
// local_reply_config runs, and so wins over its formats' (a direct
// response's body_format, as Envoy's router sets it).
func (s *stream) localReplyAs(status int, grpcStatus int64, body string, flags accesslog.ResponseFlags, details string, dropHeader, contentType string) {
	s.flags |= flags
	s.details = details
	if status == 400 && s.proto != protoHTTP2 && !s.m.cfg.h1StreamErrorOnInvalid {
		// As Envoy's onLocalReply: a 400 means the client sent something
		// invalid, and an HTTP/1 connection is then not trusted with
		// another request, unless stream_error_on_invalid_http_message
		// says otherwise.
		s.closeConn = true
	}
	if s.started {
		s.resetDownstream()
		return
	}
	s.respHeaders.reset()
	// A local reply's head is the proxy's, not the upstream's.
	s.cases.respOn = false
	if dropHeader != "" && !s.m.filters.suppressEnvoyHeaders {
		s.respHeaders.Add(dropHeader, "true")
	}
	if flags&accesslog.OverloadManager != 0 && s.m.cfg.appendLocalOverload {
		// The connection manager's own header, which the router's
		// suppress_envoy_headers does not touch.
		s.respHeaders.Add("x-envoy-local-overloaded", "true")
	}
	if contentType != "" {
		s.respHeaders.Add("content-type", contentType)
	}
	contentType = "text/plain"
	if lr := s.m.replies; lr != nil {
		status, body, contentType = lr.rewrite(s, status, body)
	}
	if s.grpcRequest() {
		if grpcStatus < 0 {
			grpcStatus = int64(grpcstatus.FromHTTP(status))
		}
		// A formatted body may end in a newline, which has no place in
		// grpc-message.
		s.grpcLocalReply(grpcStatus, strings.TrimSuffix(body, "\n"))
		return
	}
	s.status = status
	if body != "" && !s.respHeaders.Has("content-type") {
		s.respHeaders.Add("content-type", contentType)
	}
	s.finishLocal(body)
}

// redirect answers with a redirect route's status and Location.
func (s *stream) redirect(status int, location string) {
	s.details = "direct_response"
	s.respHeaders.reset()
	s.respHeaders.Add("location", location)
	body := ""
	if lr := s.m.replies; lr != nil {
		// Envoy sends redirects as local replies: local_reply_config
		// applies to them too.
		var contentType string
		status, body, contentType = lr.rewrite(s, status, body)
		if body != "" && !s.respHeaders.Has("content-type") {
			s.respHeaders.Add("content-type", contentType)
		}
	}
	s.status = status
	s.finishLocal(body)
}

// finishLocal sends a local reply's head and body. A request body that was
// not read is skipped if it has already arrived, and otherwise makes the
// connection close, since its bytes would be taken for the next request.
func (s *stream) finishLocal(body string) {
	s.finishLocalWith(body, !s.isHead)
}

// finishLocalWith is finishLocal; hasBody false ends the response with
// its head (gRPC's trailers-only replies).
func (s *stream) finishLocalWith(body string, hasBody bool) {
	if !s.bodyDone && s.body != nil && !s.skipBody() {
		s.connectionUnusable()
	}
	if s.route != nil {
		s.route.MutateWeightedResponse(s.wc, &s.respHeaders, &s.entry)
		s.route.MutateResponseHeaders(&s.respHeaders, &s.entry)
	}
	n := int64(len(body))
	if err := s.sendHead(n, hasBody); err != nil {
		if err != errRecreated {
			s.downstreamFailed()
		}
		return
	}
	if hasBody && n > 0 {
		s.produced = true
		if err := s.down.writeBodyString(body); err != nil {
			s.downstreamFailed()
			return
		}
		s.bytesSent += uint64(n)
	}
	if err := s.down.finish(); err != nil {
		s.downstreamFailed()
	}
}

// skipBody reads and drops a request body that is already buffered, so
// the connection can carry the next request. It returns false when the
// body would have to be waited for, or the client waits for 100 Continue.
func (s *stream) skipBody() bool {
	if s.expect100 {
		return false
	}
	src := s.body
	if mb, ok := src.(*mirrorBody); ok {
		// What a shadow would have kept of the rest is not needed.
		src = mb.src
	}
	if s.xbody != nil {
		// A body a filter transforms is skipped as the client sent it.
		src = s.xbody.src
	}
	if rb, ok := src.(*replayBody); ok {
		// A body ext_authz buffered: what is left of it, if it has all
		// arrived.
		if rb.skipBuffered() {
			s.requestEnded()
			return true
		}
		return false
	}
	br, ok := src.(*http1.BodyReader)
	if ok && br.SkipBuffered() {
		s.requestEnded()
		return true
	}
	return false
}

// sendHead adds the headers every response gets (date, server, via,
// x-request-id when configured), decides whether the connection closes
// after it, and writes the head.
func (s *stream) sendHead(n int64, hasBody bool) error {
	m := s.m
	s.respLength, s.respHasBody = n, hasBody
	if s.attemptCountInResponse {
		// Set by the router, before the encoder filters run.
		s.attemptRespBuf = setNumber(&s.respHeaders, "x-envoy-attempt-count", s.attemptCount(), s.attemptRespBuf)
	}
	if f := s.upAnswering; f != nil {
		s.encodeUpstreamReply(f)
	}
	s.encodeFilters()
	if s.redir.recreating {
		return errRecreated
	}
	if s.replaced {
		n, hasBody = s.respLength, s.respHasBody
	}
	n = s.transformResponse(n, hasBody)
	s.traceResponseHeaders()
	h := &s.respHeaders
	if !h.Has("date") {
		h.Add("date", m.date.get(m.stamp(s.tLast)))
	}
	switch m.cfg.serverTransform {
	case hcmv3.HttpConnectionManager_OVERWRITE:
		h.Set("server", m.cfg.serverName)
	case hcmv3.HttpConnectionManager_APPEND_IF_ABSENT:
		if !h.Has("server") {
			h.Add("server", m.cfg.serverName)
		}
	}
	if m.cfg.via != "" {
		s.viaRespBuf = appendVia(h, m.cfg.via, s.viaRespBuf)
	}
	if m.cfg.requestIDInResponse {
		if id, ok := s.reqHeaders.Get("x-request-id"); ok {
			h.Set("x-request-id", id)
		}
	}
	s.addProxyStatus()
	if !s.keepAlive || s.closeConn {
		s.closeConn = true
	} else if m.closingNow() {
		s.closeConn = true
	} else if d := m.deps.Drain; d != nil && d.DrainClose() {
		s.closeConn, s.drainClose = true, true
	} else if o := m.deps.Overload; o != nil && o.DisableKeepalive() {
		// Under overload, a share of the responses (all of them once
		// the action is saturated) close their connection: it drains
		// as for a drain close.
		m.stats.cxOverloadDisableKeepalive.Inc()
		s.closeConn, s.drainClose = true, true
	}
	s.started = true
	s.publishLog()
	return s.down.writeHead(s, n, hasBody)
}

// connectionUnusable closes an HTTP/1 connection after the response: its
// byte stream is out of step (a request body left unread or broken). An
// HTTP/2 connection is not concerned, as each stream has its own frames.
func (s *stream) connectionUnusable() {
	if s.conn != nil {
		s.closeConn = true
	}
}

// resetDownstream cuts a response that has started: the client sees an
// incomplete message and the connection closes.
func (s *stream) resetDownstream() {
	s.closeConn = true
	s.m.stats.rqTxReset.Inc()
	s.down.abort()
}

// downstreamFailed records that writing to the client failed: the client
// went away, and the connection closes.
func (s *stream) downstreamFailed() {
	if s.downstreamReset() {
		return
	}
	if s.started && s.maxDurationReached(time.Now()) {
		// A write that waited on a slow client until the stream's
		// maximum duration: the stream was cut for that.
		return
	}
	switch s.writeTimedOut {
	case writeFlushTimeout:
		// As Envoy's codec resets a stream the connection manager has
		// finished: the stream's outcome stays as it was, only
		// http2.tx_flush_timeout tells.
		s.down.abort()
		return
	case writeIdleTimeout:
		// As Envoy's stream idle timer firing after the response
		// started: the stream is reset.
		s.m.stats.rqIdleTimeout.Inc()
		s.flags |= accesslog.StreamIdleTimeout
		s.details = "stream_idle_timeout"
		s.resetDownstream()
		return
	}
	s.closeConn = true
	s.flags |= accesslog.DownstreamConnectionTermination
	s.down.abort()
	if s.conn != nil {
		// An HTTP/2 connection counts this once, when it ends.
		s.conn.destroyedActive()
		s.conn.remoteClosed = true
	}
}

// appendVia appends via to the via header, in buf, and returns buf.
func appendVia(h *headerList, via string, buf []byte) []byte {
	prev, ok := h.Get("via")
	if !ok {
		h.Add("via", via)
		return buf
	}
	buf = append(append(append(buf[:0], prev...), ", "...), via...)
	h.Set("via", view(buf))
	return buf
}

// setNumber sets header name to n, formatted in buf, and returns buf.
func setNumber(h *headerList, name string, n int64, buf []byte) []byte {
	buf = http1.AppendDecimal(buf[:0], n)
	h.Set(name, view(buf))
	return buf
}
