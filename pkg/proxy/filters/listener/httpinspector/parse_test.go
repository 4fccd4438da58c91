package httpinspector

import (
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	preface := h2Preface + "\x00\x00\x0c\x04\x00\x00\x00\x00\x00"
	for _, tc := range []struct {
		name string
		in   string
		want result
	}{
		{"http/1.0 with headers", "GET /anything HTTP/1.0\r\nhost: example.com\r\n\r\n", http10},
		{"http/1.1 with a body", "GET /anything HTTP/1.1\r\ncontent-length: 3\r\n\r\nfoo", http11},
		{"custom method", "NOT_A_LEGAL_PREFIX /anything HTTP/1.0\r\n", http10},
		{"unknown method", "BAD /anything HTTP/1.1\r\n", http11},
		{"extra spaces", "GET  /anything  HTTP/1.1\r\n\r\n", http11},
		{"bare LF", "GET / HTTP/1.1\n", http11},
		{"http/0.9 version", "GET /anything HTTP/0.9\r\n", http10},
		{"no version", "GET /anything\r\n", http10},
		{"absolute form", "GET http://example.com:80/x?y HTTP/1.1\r\n", http11},
		{"authority form", "CONNECT example.com:443 HTTP/1.1\r\n", http11},
		{"asterisk", "OPTIONS * HTTP/1.1\r\n", http11},
		{"h2 preface", preface, http2},
		{"h2 preface alone", h2Preface, http2},
		{"trailing token", "GET /anything HTTP/1.1 BadRequestLine\r\n", notHTTP},
		{"empty lines", "\r\n\r\n\r\n", notHTTP},
		{"empty lines then text", "\r\n\r\n\r\n BAD", notHTTP},
		{"leading CRLF", "\r\nGET /anything HTTP/1.1\r\n", notHTTP},
		{"bad version", "GET / HTTP/1\r\n", notHTTP},
		{"not a scheme", "GET example.com HTTP/1.1\r\n", notHTTP},
		{"bad method", "GE(T / HTTP/1.1\r\n", notHTTP},
		{"only a method", "GET\r\n", notHTTP},
		{"binary", "\x16\x03\x01\x00", notHTTP},
		{"nul in line", "GET /\x00", notHTTP},
		// Not the preface, but its first line is a request line (Envoy's
		// default parser agrees).
		{"bad preface", "PRI * HTTP/2.0\r\n\r\x0c", http10},
		{"partial line", "GET /anything HTT", needMore},
		{"one letter", "X", needMore},
		{"partial preface", h2Preface[:10], needMore},
		{"nothing", "", needMore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inspect([]byte(tc.in)); got != tc.want {
				t.Errorf("inspect(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
	// Every prefix of a request line waits for more.
	line := "GET /index HTTP/1.1\r"
	for i := 1; i <= len(line); i++ {
		if got := inspect([]byte(line[:i])); got != needMore {
			t.Errorf("prefix %q = %d, want needMore", line[:i], got)
		}
	}
	long := "GET" + strings.Repeat(" ", 3*initialRead) + "/index HTTP/1.0\r\n"
	if got := inspect([]byte(long)); got != http10 {
		t.Errorf("long request line = %d", got)
	}
}

func FuzzInspect(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte(h2Preface))
	f.Add([]byte("CONNECT a:1 HTTP/1.0\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := inspect(b)
		// More bytes never turn a decision back into a wait.
		if r != needMore && inspect(append(b, 'x')) != r {
			t.Errorf("inspect(%q) = %d, changed by one more byte", b, r)
		}
	})
}
