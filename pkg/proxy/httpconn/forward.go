package httpconn

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
)

// hopByHopRequest reports whether a request field stays on the downstream
// connection: the hop-by-hop fields of RFC 9110 §7.6.1, the framing the
// proxy writes itself, Host (sent as the possibly rewritten authority) and
// Expect (the proxy answers 100-continue itself, as Envoy does).
func hopByHopRequest(name []byte) bool {
	switch string(name) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
		"content-length", "host", "expect", "http2-settings":
		return true
	}
	return false
}

// hopByHopResponse is hopByHopRequest for response fields.
func hopByHopResponse(name []byte) bool {
	switch string(name) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "content-length":
		return true
	}
	return false
}

// nominated reports whether the Connection header named the field.
func nominated(name []byte, tokens [][]byte) bool {
	for _, t := range tokens {
		if http1.EqualFold(t, view(name)) {
			return true
		}
	}
	return false
}

// copyRequestHeaders fills s.reqHeaders with the fields of an HTTP/1
// request that go upstream.
func (s *stream) copyRequestHeaders(req *http1.Request) {
	for i := range req.Headers {
		h := &req.Headers[i]
		if hopByHopRequest(h.Name) || (len(req.ConnectionTokens) > 0 && nominated(h.Name, req.ConnectionTokens)) {
			if string(h.Name) == "te" && http1.HasToken(h.Value, "trailers") {
				s.teTrailers = true
			}
			continue
		}
		s.reqHeaders.Add(view(h.Name), view(h.Value))
	}
}

// copyResponseHeaders fills s.respHeaders with the fields of an HTTP/1
// response that go downstream.
func (s *stream) copyResponseHeaders(resp *http1.Response) {
	for i := range resp.Headers {
		h := &resp.Headers[i]
		if hopByHopResponse(h.Name) || (len(resp.ConnectionTokens) > 0 && nominated(h.Name, resp.ConnectionTokens)) {
			continue
		}
		s.respHeaders.Add(view(h.Name), view(h.Value))
	}
}

// prepareRequest applies the connection manager's request header rules:
// x-forwarded-proto, x-forwarded-for with use_remote_address, a generated
// x-request-id when there is none, and via.
func (s *stream) prepareRequest() {
	m := s.m
	h := &s.reqHeaders
	// A downstream's x-forwarded-proto is trusted only behind trusted
	// hops; otherwise it says what this hop saw.
	if m.cfg.xffTrustedHops == 0 || !h.Has("x-forwarded-proto") {
		h.Set("x-forwarded-proto", s.scheme)
	}
	if m.cfg.useRemoteAddress && !m.cfg.skipXFFAppend && s.remoteIP != "" {
		if prev, ok := h.Get("x-forwarded-for"); ok {
			s.xffBuf = append(append(append(s.xffBuf[:0], prev...), ", "...), s.remoteIP...)
			h.Set("x-forwarded-for", view(s.xffBuf))
		} else {
			h.Add("x-forwarded-for", s.remoteIP)
		}
	}
	if m.cfg.generateRequestID && !h.Has("x-request-id") {
		s.idBuf = appendUUID(s.idBuf[:0])
		h.Add("x-request-id", view(s.idBuf))
	}
	if m.cfg.via != "" {
		s.viaReqBuf = appendVia(h, m.cfg.via, s.viaReqBuf)
	}
}
