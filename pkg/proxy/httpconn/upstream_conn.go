package httpconn

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// gotConn is the connection Go's HTTP/2 transport chose for a request.
type gotConn struct {
	local net.Addr
	tls   *accesslog.TLSInfo
}

// readsUpstreamConn reports whether anything shows the upstream
// connection of s's request: an access logger, a local reply or span name
// format of the connection manager (Manager.upConn), or a response
// header or span name format of its route. Only then does an HTTP/2
// request carry the trace below, which costs a copy of the request, a
// context and a closure each time.
func (s *stream) readsUpstreamConn() bool {
	return s.m.upConn || (s.route != nil && s.route.ReadsUpstreamConnection())
}

// traceUpstreamConn has req report the connection it goes on into got:
// Go's HTTP/2 transport picks it out of sight, and the access log shows
// its local address and TLS (%UPSTREAM_LOCAL_ADDRESS%, %UPSTREAM_TLS_*%).
// The report may come from the transport's goroutine, hence the atomic.
// Callers ask readsUpstreamConn first.
func traceUpstreamConn(req *http.Request, got *atomic.Pointer[gotConn]) *http.Request {
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if info.Conn != nil {
			got.Store(&gotConn{local: info.Conn.LocalAddr(), tls: accesslog.UpstreamTLS(info.Conn)})
		}
	}}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
}

// noteUpstreamConn records the connection an HTTP/2 request went on, once
// its transport reported it; got is nil when the request was not traced.
func (s *stream) noteUpstreamConn(got *atomic.Pointer[gotConn]) {
	if got == nil {
		return
	}
	g := got.Load()
	if g == nil {
		return
	}
	s.upLocalBuf = appendAddr(s.upLocalBuf[:0], g.local)
	s.entry.UpstreamLocalAddress = view(s.upLocalBuf)
	s.entry.UpstreamTLS = g.tls
}

// readsUpstreamConnection reports whether a span name format or custom tag
// of the connection manager may read the access-log entry's upstream connection;
// nil reads nothing.
func (t *tracingConfig) readsUpstreamConnection() bool {
	return t != nil && (t.operation.ReadsUpstreamConnection() || t.upstreamOperation.ReadsUpstreamConnection() ||
		router.TagsReadUpstreamConnection(t.tags))
}
