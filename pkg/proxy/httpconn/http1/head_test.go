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

// errMoreRead is what stallReader returns once its bytes are used up: a
// test that gets it read further than the bytes it was given.
var errMoreRead = errors.New("read past the bytes given: the check waited for more")

// stallReader hands out its bytes, then fails as a client that sends no
// more would leave a read blocked.
type stallReader struct{ r io.Reader }

func (s stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errMoreRead
	}
	return n, err
}

func TestReadRequestHead(t *testing.T) {
	const get = "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
	tests := map[string]struct {
		input string
		// stall: after input, the client sends nothing more; the error
		// must come from the bytes given, not from waiting.
		stall   bool
		want    string // the head read, when no error
		wantErr error
	}{
		"a request":                {input: get, want: get},
		"leading empty lines":      {input: "\r\n\n" + get, want: get},
		"a token method":           {input: "M-SEARCH * HTTP/1.1\r\nHost: h\r\n\r\n", want: "M-SEARCH * HTTP/1.1\r\nHost: h\r\n\r\n"},
		"tls client hello":         {input: "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", stall: true, wantErr: ErrMethod},
		"binary after a good byte": {input: "G\x00", stall: true, wantErr: ErrMethod},
		"nul first":                {input: "\x00", stall: true, wantErr: ErrMethod},
		"space first":              {input: " GET / HTTP/1.1", stall: true, wantErr: ErrMethod},
		"separator in the method":  {input: "GE(T", stall: true, wantErr: ErrMethod},
		"high byte":                {input: "\xffGET", stall: true, wantErr: ErrMethod},
		"line ends in the method":  {input: "GET\r\n", stall: true, wantErr: ErrMethod},
		"carriage return alone":    {input: "\rGET", stall: true, wantErr: ErrMethod},
		"bad byte after an empty line": {
			input: "\r\n\x16", stall: true, wantErr: ErrMethod,
		},
		"endless empty lines": {input: strings.Repeat("\r\n", 40), stall: true, wantErr: ErrRequestLine},
		"a partial method waits": {
			input: "GET", stall: true, wantErr: errMoreRead,
		},
		"a method longer than the buffer is left to the parser": {
			input: strings.Repeat("A", 40) + " / HTTP/1.1\r\n\r\n",
			want:  strings.Repeat("A", 40) + " / HTTP/1.1\r\n\r\n",
		},
		"clean eof":                   {input: "", wantErr: io.EOF},
		"eof after empty lines":       {input: "\r\n\r\n", wantErr: io.EOF},
		"eof inside the method":       {input: "GE", wantErr: ErrTruncatedHead},
		"eof after a carriage return": {input: "\r", wantErr: ErrTruncatedHead},
		"eof inside the head":         {input: "GET / HTTP/1.1\r\nHost:", wantErr: ErrTruncatedHead},
	}
	readers := map[string]func(string) io.Reader{
		"whole":        func(s string) io.Reader { return strings.NewReader(s) },
		"byte by byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half at once": func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for name, tc := range tests {
		for rname, mk := range readers {
			t.Run(name+"/"+rname, func(t *testing.T) {
				src := mk(tc.input)
				if tc.stall {
					src = stallReader{src}
				}
				r := bufio.NewReaderSize(src, 16)
				head, err := ReadRequestHead(r, nil, 1024)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("error = %v, want %v", err, tc.wantErr)
					}
					if len(head) != 0 {
						t.Fatalf("head %q returned with an error", head)
					}
					return
				}
				if err != nil || string(head) != tc.want {
					t.Fatalf("head = %q, %v; want %q", head, err, tc.want)
				}
			})
		}
	}
}

// TestReadRequestHeadPipelined reads requests back to back with their
// methods already buffered, as on a busy kept-alive connection.
func TestReadRequestHeadPipelined(t *testing.T) {
	in := "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\n\r\n\x16"
	r := bufio.NewReader(strings.NewReader(in))
	var head []byte
	for _, want := range []string{"GET /1 ", "POST /2 "} {
		var err error
		if head, err = ReadRequestHead(r, head, 1024); err != nil || !strings.HasPrefix(string(head), want) {
			t.Fatalf("head = %q, %v; want %q...", head, err, want)
		}
	}
	if _, err := ReadRequestHead(r, head, 1024); !errors.Is(err, ErrMethod) {
		t.Fatalf("third head: error = %v, want %v", err, ErrMethod)
	}
}
