package httpconn

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// checkUnderscores applies common_http_protocol_options
// headers_with_underscores_action to the request's header names, as
// Envoy's codecs do: ALLOW (the default) leaves them; DROP_HEADER removes
// each such header; REJECT_REQUEST refuses the request, with 400 over
// HTTP/1 (closing the connection) and a stream reset over HTTP/2. The
// codec's stats (http1.* or http2.*) count them. It returns false when the
// request was refused.
func (s *stream) checkUnderscores() bool {
	action := s.m.cfg.underscores
	if action == corev3.HttpProtocolOptions_ALLOW {
		return true
	}
	h := &s.reqHeaders
	found := false
	for i := range h.fields {
		if strings.IndexByte(h.fields[i].name, '_') >= 0 {
			found = true
			break
		}
	}
	if !found {
		return true
	}
	codec := "http1."
	if s.proto == protoHTTP2 {
		codec = "http2."
	}
	st := s.m.deps.Stats
	if action == corev3.HttpProtocolOptions_DROP_HEADER {
		out := 0
		for i := range h.fields {
			if strings.IndexByte(h.fields[i].name, '_') >= 0 {
				st.Counter(codec + "dropped_headers_with_underscores").Inc()
				continue
			}
			h.fields[out] = h.fields[i]
			out++
		}
		h.truncate(out)
		return true
	}
	st.Counter(codec + "requests_rejected_with_underscores_in_headers").Inc()
	s.m.stats.cxProtocolError.Inc()
	if s.proto == protoHTTP2 {
		s.flags |= accesslog.DownstreamProtocolError
		s.details = "http2.unexpected_underscore"
		s.down.abort()
		return false
	}
	s.keepAlive, s.closeConn = false, true
	s.localReply(400, "Bad Request", accesslog.DownstreamProtocolError, "http1.unexpected_underscore")
	return false
}
