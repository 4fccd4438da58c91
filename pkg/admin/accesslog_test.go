package admin

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// steppingClock returns start, then start plus step, plus 2 steps, and so on.
func steppingClock(start time.Time, step time.Duration) func() time.Time {
	next := start
	return func() time.Time {
		now := next
		next = next.Add(step)
		return now
	}
}

func TestAccessLogLine(t *testing.T) {
	// 10:00:00.123 in UTC+2, to show START_TIME is printed in UTC.
	start := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
	tests := map[string]struct {
		build func() *http.Request
		want  string
	}{
		"get with client headers": {
			build: func() *http.Request {
				r := httptest.NewRequest(http.MethodGet, "/ready?x=1", nil)
				r.Header.Set("User-Agent", "curl/8.5.0")
				r.Header.Set("X-Forwarded-For", "10.0.0.1")
				r.Header.Set("X-Request-Id", "abc")
				return r
			},
			want: `[2024-05-01T10:00:00.123Z] "GET /ready?x=1 HTTP/1.1" 200 - 0 5 7 - "10.0.0.1" "curl/8.5.0" "abc" "127.0.0.1:9901" "-"` + "\n",
		},
		"form post counts the body": {
			build: func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, "/runtime_modify", strings.NewReader("a=1&b=22"))
				r.Header.Set("Content-Type", formContentType)
				return r
			},
			want: `[2024-05-01T10:00:00.123Z] "POST /runtime_modify HTTP/1.1" 200 - 8 3 7 - "-" "-" "-" "127.0.0.1:9901" "-"` + "\n",
		},
		"not found, raw target kept": { // {sent}: the help text's length
			build: func() *http.Request { return httptest.NewRequest(http.MethodGet, "//nope/%41", nil) },
			want:  `[2024-05-01T10:00:00.123Z] "GET //nope/%41 HTTP/1.1" 404 - 0 {sent} 7 - "-" "-" "-" "127.0.0.1:9901" "-"` + "\n",
		},
		"refused mutation": {
			build: func() *http.Request { return httptest.NewRequest(http.MethodGet, "/healthcheck/fail", nil) },
			want:  `[2024-05-01T10:00:00.123Z] "GET /healthcheck/fail HTTP/1.1" 400 - 0 38 7 - "-" "-" "-" "127.0.0.1:9901" "-"` + "\n",
		},
		"http/2": {
			build: func() *http.Request {
				r := httptest.NewRequest(http.MethodGet, "/hot_restart_version", nil)
				r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
				return r
			},
			want: `[2024-05-01T10:00:00.123Z] "GET /hot_restart_version HTTP/2" 200 - 0 10 7 - "-" "-" "-" "127.0.0.1:9901" "-"` + "\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			ta := newTestAdmin(t, func(o *Options) {
				o.AccessLog = lineLogger(&out)
				o.Now = steppingClock(start, 7*time.Millisecond+300*time.Microsecond)
			})
			r := tc.build()
			r.Host = "127.0.0.1:9901"
			rec := serveHTTP(ta.Handler(), r)
			want := strings.ReplaceAll(tc.want, "{sent}", strconv.Itoa(rec.Body.Len()))
			if got := out.String(); got != want {
				t.Errorf("access log:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestAccessLogConcurrent checks that concurrent requests produce whole,
// separate lines.
func TestAccessLogConcurrent(t *testing.T) {
	var out bytes.Buffer
	ta := newTestAdmin(t, func(o *Options) { o.AccessLog = lineLogger(&out) })
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r := httptest.NewRequest(http.MethodGet, "/hot_restart_version", nil)
			serveHTTP(ta.Handler(), r)
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), n, out.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, `"GET /hot_restart_version HTTP/1.1" 200 - 0 10 `) || !strings.HasSuffix(l, `"example.com" "-"`) {
			t.Errorf("malformed line %q", l)
		}
	}
}

// lineLogger logs in Envoy's default format to w, one write at a time.
func lineLogger(w io.Writer) accesslog.Sink {
	return accesslog.LineSink{Format: accesslog.Default(), W: &lockedWriter{w: w}}
}

// lockedWriter serializes writes to a writer that is not safe for
// concurrent use.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
