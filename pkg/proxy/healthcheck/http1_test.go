package healthcheck

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

func TestReadHead(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		head      bool
		wantErr   bool
		status    int
		body      string
		close     bool
		degraded  bool
		immediate bool
		checkedAs string
	}{
		{name: "length", in: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokMORE", status: 200, body: "ok"},
		{name: "chunked", in: "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n", status: 503, body: "no"},
		{name: "interim answers skipped", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", status: 204},
		{name: "HTTP/1.0 closes", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", status: 200, close: true},
		{name: "HTTP/1.0 keep-alive", in: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", status: 200},
		{name: "connection close", in: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", status: 200, close: true},
		{name: "until close", in: "HTTP/1.1 200 OK\r\n\r\nall of it", status: 200, body: "all of it", close: true},
		{name: "HEAD has no body", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", head: true, status: 200},
		{name: "envoy headers", in: "HTTP/1.1 200 OK\r\nX-Envoy-Degraded: \r\nx-envoy-immediate-health-check-fail: true\r\nx-envoy-upstream-healthchecked-cluster: svc-a\r\nContent-Length: 0\r\n\r\n",
			status: 200, degraded: true, immediate: true, checkedAs: "svc-a"},
		{name: "bad status line", in: "HTTP/2 200\r\n\r\n", wantErr: true},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: true},
		{name: "bad header", in: "HTTP/1.1 200 OK\r\nno colon\r\n\r\n", wantErr: true},
		{name: "head too large", in: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxResponseHead) + "\r\n\r\n", wantErr: true},
		{name: "truncated", in: "HTTP/1.1 200 OK\r\nContent-Le", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.in))
			h, err := readHead(br, tc.head)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error, head %+v", h)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(h.body(br))
			if h.status != tc.status || string(b) != tc.body || h.close != tc.close || h.degraded != tc.degraded || h.immediate != tc.immediate || h.checkedAs != tc.checkedAs {
				t.Errorf("head %+v body %q", h, b)
			}
		})
	}
}
