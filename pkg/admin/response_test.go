package admin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
)

func TestResponse(t *testing.T) {
	tests := map[string]struct {
		handle      func(w *Response)
		status      int
		contentType string
		body        string
		log         string
	}{
		"defaults": {
			handle:      func(w *Response) { _, _ = w.WriteString("hi") },
			status:      http.StatusOK,
			contentType: ContentTypeText,
			body:        "hi",
		},
		"empty body still commits": {
			handle:      func(*Response) {},
			status:      http.StatusOK,
			contentType: ContentTypeText,
		},
		"status and type fixed by the first write": {
			handle: func(w *Response) {
				w.SetStatus(http.StatusAccepted)
				w.SetContentType("text/csv")
				_, _ = w.WriteString("a,b\n")
				w.SetStatus(http.StatusTeapot)
				w.SetContentType("text/html")
			},
			status:      http.StatusAccepted,
			contentType: "text/csv",
			body:        "a,b\n",
		},
		"fail": {
			handle:      func(w *Response) { w.Fail(errTest) },
			status:      http.StatusInternalServerError,
			contentType: ContentTypeText,
			body:        "disk on fire\n",
			log:         `"msg"="admin request failed" "error"="disk on fire" "path"="/t"`,
		},
		"fail replaces a chosen content type": {
			handle: func(w *Response) {
				w.SetContentType(ContentTypeJSON)
				w.Fail(errTest)
			},
			status:      http.StatusInternalServerError,
			contentType: ContentTypeText,
			body:        "disk on fire\n",
			log:         "admin request failed",
		},
		"fail after the body started": {
			handle: func(w *Response) {
				_, _ = w.WriteString("partial")
				w.Fail(errTest)
			},
			status:      http.StatusOK,
			contentType: ContentTypeText,
			body:        "partial",
			log:         "admin request failed",
		},
		"proto that cannot be rendered": {
			handle:      func(w *Response) { w.Proto(&anypb.Any{TypeUrl: "type.googleapis.com/no.such.Type"}, false) },
			status:      http.StatusInternalServerError,
			contentType: ContentTypeText,
			body:        "render google.protobuf.Any as JSON: ",
			log:         "admin request failed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logs := &logSink{}
			rec := httptest.NewRecorder()
			w := newResponse(rec, logs.logger(), "/t")
			tc.handle(w)
			w.finish()
			if rec.Code != tc.status || rec.Header().Get("Content-Type") != tc.contentType || !strings.HasPrefix(rec.Body.String(), tc.body) {
				t.Errorf("got %d %q %q, want %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), tc.status, tc.contentType, tc.body)
			}
			if tc.body == "" && rec.Body.Len() != 0 {
				t.Errorf("body = %q, want none", rec.Body.String())
			}
			if got := logs.text(); tc.log == "" && got != "" || !strings.Contains(got, tc.log) {
				t.Errorf("log = %q, want %q", got, tc.log)
			}
		})
	}
}

// brokenWriter is a ResponseWriter whose client went away.
type brokenWriter struct {
	header http.Header
	writes int
}

func (b *brokenWriter) Header() http.Header { return b.header }
func (b *brokenWriter) WriteHeader(int)     {}
func (b *brokenWriter) Write([]byte) (int, error) {
	b.writes++
	return 0, errTest
}

func TestResponseStopsAfterAWriteError(t *testing.T) {
	logs := &logSink{}
	bw := &brokenWriter{header: http.Header{}}
	w := newResponse(bw, logs.logger(), "/t")
	if _, err := w.WriteString("a"); !errors.Is(err, errTest) {
		t.Errorf("first write error = %v, want %v", err, errTest)
	}
	if _, err := w.WriteString("b"); !errors.Is(err, errTest) {
		t.Errorf("second write error = %v, want %v", err, errTest)
	}
	w.finish()
	if bw.writes != 1 {
		t.Errorf("writes reaching the connection = %d, want 1", bw.writes)
	}
	if !strings.Contains(logs.text(), "admin response not delivered") {
		t.Errorf("log = %q, want the undelivered response at debug level", logs.text())
	}
}
