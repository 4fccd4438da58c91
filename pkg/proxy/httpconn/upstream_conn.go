package httpconn

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// gotConn is the connection Go's HTTP/2 transport chose for a request.
type gotConn struct {
	local net.Addr
	tls   *accesslog.TLSInfo
}

// traceUpstreamConn has req report the connection it goes on into got:
// Go's HTTP/2 transport picks it out of sight, and the access log shows
// its local address and TLS (%UPSTREAM_LOCAL_ADDRESS%, %UPSTREAM_TLS_*%).
// The report may come from the transport's goroutine, hence the atomic.
func traceUpstreamConn(req *http.Request, got *atomic.Pointer[gotConn]) *http.Request {
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if info.Conn != nil {
			got.Store(&gotConn{local: info.Conn.LocalAddr(), tls: accesslog.UpstreamTLS(info.Conn)})
		}
	}}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
}

// noteUpstreamConn records the connection an HTTP/2 request went on, once
// its transport reported it.
func (s *stream) noteUpstreamConn(got *atomic.Pointer[gotConn]) {
	g := got.Load()
	if g == nil {
		return
	}
	s.upLocalBuf = appendAddr(s.upLocalBuf[:0], g.local)
	s.entry.UpstreamLocalAddress = view(s.upLocalBuf)
	s.entry.UpstreamTLS = g.tls
}
