package http1

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadHead(t *testing.T) {
	tests := map[string]struct {
		input    string
		max      int
		want     []string // heads read in order
		wantRest string   // what the reader still holds afterwards
		wantErr  error    // the error after the heads
	}{
		"one head then body": {
			input: "POST / HTTP/1.1\r\nHost: h\r\n\r\nbody", max: 1024,
			want: []string{"POST / HTTP/1.1\r\nHost: h\r\n\r\n"}, wantRest: "body",
		},
		"pipelined heads": {
			input: "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n", max: 1024,
			want:    []string{"GET /1 HTTP/1.1\r\nHost: h\r\n\r\n", "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"},
			wantErr: io.EOF,
		},
		"leading empty lines dropped": {
			input: "\r\n\nGET / HTTP/1.1\r\n\r\n", max: 1024,
			want: []string{"GET / HTTP/1.1\r\n\r\n"}, wantErr: io.EOF,
		},
		"bare lf head": {
			input: "GET / HTTP/1.1\nA: b\n\nrest", max: 1024,
			want: []string{"GET / HTTP/1.1\nA: b\n\n"}, wantRest: "rest",
		},
		"clean eof": {input: "", max: 1024, wantErr: io.EOF},
		"eof inside head": {
			input: "GET / HTTP/1.1\r\nHost:", max: 1024, wantErr: ErrTruncatedHead,
		},
		"too large": {
			input: "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", 100) + "\r\n\r\n", max: 64, wantErr: ErrHeadTooLarge,
		},
		"too large without end": {
			input: "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", 10000), max: 64, wantErr: ErrHeadTooLarge,
		},
		"endless empty lines": {
			input: strings.Repeat("\r\n", 100), max: 1 << 16, wantErr: ErrRequestLine,
		},
		"exactly at the limit": {
			input: "GET / HTTP/1.1\r\n\r\n", max: len("GET / HTTP/1.1\r\n\r\n"),
			want: []string{"GET / HTTP/1.1\r\n\r\n"}, wantErr: io.EOF,
		},
	}
	readers := map[string]func(string) io.Reader{
		"whole":        func(s string) io.Reader { return strings.NewReader(s) },
		"byte by byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half at once": func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for name, tc := range tests {
		for rname, mk := range readers {
			t.Run(name+"/"+rname, func(t *testing.T) {
				// A small buffer makes heads span several fills.
				r := bufio.NewReaderSize(mk(tc.input), 16)
				var buf []byte
				for i, want := range tc.want {
					head, err := ReadHead(r, buf, tc.max)
					if err != nil {
						t.Fatalf("head %d: %v", i, err)
					}
					if string(head) != want {
						t.Fatalf("head %d = %q, want %q", i, head, want)
					}
					buf = head
				}
				if tc.wantErr != nil {
					if _, err := ReadHead(r, buf, tc.max); !errors.Is(err, tc.wantErr) {
						t.Fatalf("error = %v, want %v", err, tc.wantErr)
					}
					return
				}
				rest, err := io.ReadAll(r)
				if err != nil || string(rest) != tc.wantRest {
					t.Fatalf("rest = %q, %v; want %q", rest, err, tc.wantRest)
				}
			})
		}
	}
}
