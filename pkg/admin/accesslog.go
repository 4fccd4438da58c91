package admin

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	"github.com/gorilla/handlers"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// accessRecord carries what gorilla's logging handler does not measure: the
// start time on the admin's clock (so tests control it), the request body
// bytes read and the response headers.
type accessRecord struct {
	start      time.Time
	received   int64
	respHeader http.Header
}

// accessRecordKey is the context key of the request's *accessRecord.
type accessRecordKey struct{}

// accessLog records every request with Options.AccessLog, through gorilla's
// CustomLoggingHandler, which measures the status and bytes sent.
func (a *Admin) accessLog(next http.Handler) http.Handler {
	logged := handlers.CustomLoggingHandler(io.Discard, next, a.logAccess)
	return http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		// The handler sets its headers in this map, which gorilla's
		// wrapper shares.
		rec := &accessRecord{start: a.now(), respHeader: rw.Header()}
		hr = hr.WithContext(context.WithValue(hr.Context(), accessRecordKey{}, rec))
		if hr.Body != nil && hr.Body != http.NoBody {
			hr.Body = &countingBody{ReadCloser: hr.Body, n: &rec.received}
		}
		logged.ServeHTTP(rw, hr)
	})
}

// logAccess fills an access-log entry from the finished request, as the
// connection manager fills one for proxied requests: response flags,
// upstream and route values never apply to the admin and print as
// missing.
func (a *Admin) logAccess(_ io.Writer, p handlers.LogFormatterParams) {
	hr := p.Request
	rec, _ := hr.Context().Value(accessRecordKey{}).(*accessRecord)
	if rec == nil {
		rec = &accessRecord{start: p.TimeStamp}
	}
	target := hr.RequestURI
	if target == "" {
		target = p.URL.RequestURI()
	}
	e := accesslog.Entry{
		StartTime:               rec.start,
		Method:                  hr.Method,
		Path:                    target,
		Authority:               hr.Host,
		Scheme:                  "http",
		Protocol:                protocol(hr),
		RequestHeaders:          headerGetter(hr.Header),
		ResponseCode:            p.StatusCode,
		BytesReceived:           uint64(max(rec.received, 0)),
		BytesSent:               uint64(max(p.Size, 0)),
		Duration:                a.now().Sub(rec.start),
		DownstreamRemoteAddress: hr.RemoteAddr,
		Type:                    datav3.AccessLogType_DownstreamEnd,
	}
	if rec.respHeader != nil {
		e.ResponseHeaders = headerGetter(rec.respHeader)
	}
	if la, ok := hr.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		e.DownstreamLocalAddress = la.String()
	}
	if _, err := a.opts.AccessLog.Log(nil, &e); err != nil {
		a.log.Error(err, "cannot write the admin access log")
	}
}

// headerGetter reads net/http headers as the access-log formatter asks for
// them: by lower-case name, several values joined by ",".
type headerGetter http.Header

func (h headerGetter) Get(name string) (string, bool) {
	vs := http.Header(h).Values(name)
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

// protocol spells the request's protocol as Envoy's %PROTOCOL% does
// ("HTTP/2", not Go's "HTTP/2.0").
func protocol(hr *http.Request) string {
	switch hr.ProtoMajor {
	case 2:
		return "HTTP/2"
	case 3:
		return "HTTP/3"
	default:
		return hr.Proto
	}
}

// countingBody counts the request body bytes read (%BYTES_RECEIVED%).
type countingBody struct {
	io.ReadCloser
	n *int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	*c.n += int64(n)
	return n, err
}
