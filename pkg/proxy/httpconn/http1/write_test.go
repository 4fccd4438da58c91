package http1

import (
	"path/filepath"
	"testing"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

func TestAppend(t *testing.T) {
	var b []byte
	b = AppendRequestLine(b, []byte("GET"), []byte("/a?b"))
	b = AppendHeader(b, []byte("host"), []byte("example.com"))
	b = AppendHeaderString(b, "x-request-id", "id")
	b = AppendContentLength(b, 1234)
	b = append(b, CRLF...)
	b = AppendStatusLine(b, HTTP11, 200)
	b = AppendStatusLine(b, HTTP10, 503)
	b = AppendStatusLine(b, HTTP11, 299)
	b = AppendChunkHeader(b, 255)
	b = append(b, LastChunk...)
	b = append(b, Continue...)
	golden.Check(t, filepath.Join("testdata", "append.golden"), b)
}

func TestStatusText(t *testing.T) {
	tests := map[string]struct {
		code int
		want string
	}{
		"ok":           {200, "OK"},
		"timeout":      {504, "Gateway Timeout"},
		"too large":    {431, "Request Header Fields Too Large"},
		"unassigned":   {299, "Unknown"},
		"out of range": {600, "Unknown"},
		"negative":     {-1, "Unknown"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := StatusText(tc.code); got != tc.want {
				t.Errorf("StatusText(%d) = %q, want %q", tc.code, got, tc.want)
			}
		})
	}
}
