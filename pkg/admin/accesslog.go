package admin

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/handlers"
)

// accessLogTime is START_TIME's layout in Envoy's default format, in UTC.
const accessLogTime = "2006-01-02T15:04:05.000Z"

// accessRecord carries what gorilla's logging handler does not measure: the
// start time on the admin's clock (so tests control it) and the request
// body bytes read.
type accessRecord struct {
	start    time.Time
	received int64
}

// accessRecordKey is the context key of the request's *accessRecord.
type accessRecordKey struct{}

// accessLog writes one line per request to Options.AccessLog in Envoy's
// default access-log format (reference §6), through gorilla's
// CustomLoggingHandler, which measures the status and bytes sent.
func (a *Admin) accessLog(next http.Handler) http.Handler {
	out := &lockedWriter{w: a.opts.AccessLog}
	logged := handlers.CustomLoggingHandler(out, next, a.formatAccessLog)
	return http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		rec := &accessRecord{start: a.now()}
		hr = hr.WithContext(context.WithValue(hr.Context(), accessRecordKey{}, rec))
		if hr.Body != nil && hr.Body != http.NoBody {
			hr.Body = &countingBody{ReadCloser: hr.Body, n: &rec.received}
		}
		logged.ServeHTTP(rw, hr)
	})
}

// formatAccessLog renders
//
//	[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"
//
// Response flags, upstream service time and upstream host never apply to
// the admin and print "-", as do absent headers. DURATION is whole
// milliseconds.
func (a *Admin) formatAccessLog(out io.Writer, p handlers.LogFormatterParams) {
	start, received := p.TimeStamp, int64(0)
	if rec, ok := p.Request.Context().Value(accessRecordKey{}).(*accessRecord); ok {
		start, received = rec.start, rec.received
	}
	hr := p.Request
	target := hr.RequestURI
	if target == "" {
		target = p.URL.RequestURI()
	}

	line := make([]byte, 0, 256)
	line = append(line, '[')
	line = start.UTC().AppendFormat(line, accessLogTime)
	line = append(line, `] "`...)
	line = append(line, hr.Method...)
	line = append(line, ' ')
	line = append(line, target...)
	line = append(line, ' ')
	line = append(line, protocol(hr)...)
	line = append(line, `" `...)
	line = strconv.AppendInt(line, int64(p.StatusCode), 10)
	line = append(line, " - "...)
	line = strconv.AppendInt(line, received, 10)
	line = append(line, ' ')
	line = strconv.AppendInt(line, int64(p.Size), 10)
	line = append(line, ' ')
	line = strconv.AppendInt(line, a.now().Sub(start).Milliseconds(), 10)
	line = append(line, " - "...)
	line = appendQuotedOrDash(line, hr.Header.Get("X-Forwarded-For"))
	line = append(line, ' ')
	line = appendQuotedOrDash(line, hr.UserAgent())
	line = append(line, ' ')
	line = appendQuotedOrDash(line, hr.Header.Get("X-Request-Id"))
	line = append(line, ' ')
	line = appendQuotedOrDash(line, hr.Host)
	line = append(line, ` "-"`+"\n"...)
	if _, err := out.Write(line); err != nil {
		a.log.Error(err, "cannot write the admin access log")
	}
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

// appendQuotedOrDash appends s in double quotes, or "-" for an absent value.
// Values are not escaped, as in Envoy; net/http has already refused header
// values containing line breaks, so one request stays one line.
func appendQuotedOrDash(b []byte, s string) []byte {
	if s == "" {
		s = "-"
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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

// lockedWriter serializes writes so that lines of concurrent requests do not
// interleave in the access log file.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
