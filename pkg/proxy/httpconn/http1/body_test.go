package http1

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readBody drains a body and returns its bytes and the first error other
// than io.EOF.
func readBody(b *BodyReader) (string, error) {
	var out strings.Builder
	for {
		p, err := b.Next()
		out.Write(p)
		if errors.Is(err, io.EOF) {
			return out.String(), nil
		}
		if err != nil {
			return out.String(), err
		}
	}
}

func TestBodyReader(t *testing.T) {
	tests := map[string]struct {
		kind     BodyKind
		length   int64
		input    string
		want     string
		wantRest string
		wantErr  error
	}{
		"no body":            {kind: BodyNone, input: "next", want: "", wantRest: "next"},
		"zero length":        {kind: BodyLength, length: 0, input: "next", want: "", wantRest: "next"},
		"length":             {kind: BodyLength, length: 5, input: "hello, next", want: "hello", wantRest: ", next"},
		"length cut short":   {kind: BodyLength, length: 10, input: "hello", want: "hello", wantErr: ErrTruncatedBody},
		"until close":        {kind: BodyUntilClose, input: "all of it", want: "all of it"},
		"chunked":            {kind: BodyChunked, input: "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\nnext", want: "hello, world", wantRest: "next"},
		"chunked upper hex":  {kind: BodyChunked, input: "A\r\n0123456789\r\n0\r\n\r\n", want: "0123456789"},
		"chunk extensions":   {kind: BodyChunked, input: "5;a=b;c\r\nhello\r\n0 ;x=\"y\"\r\n\r\n", want: "hello"},
		"trailers discarded": {kind: BodyChunked, input: "2\r\nhi\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\nnext", want: "hi", wantRest: "next"},
		"leading zeros":      {kind: BodyChunked, input: "0002\r\nhi\r\n000\r\n\r\n", want: "hi"},

		"missing size":            {kind: BodyChunked, input: "\r\nhello\r\n0\r\n\r\n", wantErr: ErrChunkSize},
		"negative size":           {kind: BodyChunked, input: "-5\r\nhello\r\n0\r\n\r\n", wantErr: ErrChunkSize},
		"size with trailing junk": {kind: BodyChunked, input: "5x\r\nhello\r\n0\r\n\r\n", wantErr: ErrChunkSize},
		"size with space only":    {kind: BodyChunked, input: "5 \r\nhello\r\n0\r\n\r\n", wantErr: ErrChunkSize},
		"size overflow":           {kind: BodyChunked, input: "1000000000000000\r\n", wantErr: ErrChunkSize},
		"bare lf after size":      {kind: BodyChunked, input: "5\nhello\r\n0\r\n\r\n", wantErr: ErrChunkFraming},
		"data longer than size":   {kind: BodyChunked, input: "3\r\nhello\r\n0\r\n\r\n", want: "hel", wantErr: ErrChunkFraming},
		"control in extension":    {kind: BodyChunked, input: "5;a=\x01\r\nhello\r\n0\r\n\r\n", wantErr: ErrChunkSize},
		"truncated in data":       {kind: BodyChunked, input: "5\r\nhel", want: "hel", wantErr: ErrTruncatedBody},
		"truncated before crlf":   {kind: BodyChunked, input: "5\r\nhello", want: "hello", wantErr: ErrTruncatedBody},
		"truncated in trailers":   {kind: BodyChunked, input: "0\r\nX: y\r\n", wantErr: ErrTruncatedBody},
		"long chunk line":         {kind: BodyChunked, input: "5;" + strings.Repeat("x", 5000) + "\r\nhello\r\n0\r\n\r\n", wantErr: ErrChunkLineTooLong},
		"trailers too large":      {kind: BodyChunked, input: "0\r\nX: " + strings.Repeat("y", 2000) + "\r\n\r\n", wantErr: ErrTrailersTooLarge},
	}
	readers := map[string]func(string) io.Reader{
		"whole":        func(s string) io.Reader { return strings.NewReader(s) },
		"byte by byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	}
	for name, tc := range tests {
		for rname, mk := range readers {
			t.Run(name+"/"+rname, func(t *testing.T) {
				r := bufio.NewReaderSize(mk(tc.input), 8192)
				var b BodyReader
				b.Reset(r, tc.kind, tc.length, 1024, nil)
				got, err := readBody(&b)
				if got != tc.want {
					t.Errorf("body = %q, want %q", got, tc.want)
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				if tc.wantErr != nil {
					return
				}
				if !b.Done() {
					t.Error("Done() = false after the end of the body")
				}
				rest, _ := io.ReadAll(r)
				if string(rest) != tc.wantRest {
					t.Errorf("rest = %q, want %q", rest, tc.wantRest)
				}
			})
		}
	}
}

// TestBodyReaderFlushesBeforeWaiting checks that pending output is flushed
// before each read that waits for the peer, and only then.
func TestBodyReaderFlushesBeforeWaiting(t *testing.T) {
	r := bufio.NewReader(iotest.OneByteReader(strings.NewReader("2\r\nab\r\n0\r\n\r\n")))
	flushes := 0
	var b BodyReader
	b.Reset(r, BodyChunked, 0, 1024, func() error { flushes++; return nil })
	got, err := readBody(&b)
	if err != nil || got != "ab" {
		t.Fatalf("body = %q, %v", got, err)
	}
	// Every byte arrives alone, so every byte needed is a wait.
	if flushes == 0 {
		t.Fatal("flush was never called although every read waited")
	}

	r = bufio.NewReader(strings.NewReader("2\r\nab\r\n0\r\n\r\n"))
	flushes = 0
	b.Reset(r, BodyChunked, 0, 1024, func() error { flushes++; return nil })
	if _, err := readBody(&b); err != nil {
		t.Fatal(err)
	}
	// The first read waits; everything after is buffered.
	if flushes != 1 {
		t.Errorf("flushes = %d for a body read in one go, want 1", flushes)
	}
}

func TestBodyReaderFlushError(t *testing.T) {
	boom := errors.New("peer gone")
	var b BodyReader
	b.Reset(bufio.NewReader(strings.NewReader("abc")), BodyLength, 3, 0, func() error { return boom })
	if _, err := b.Next(); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want the flush error", err)
	}
}

// TestBodyReaderTrailers checks that a chunked body's trailer section is
// parsed only when kept, validated like a header section and bounded in
// count, and that a reused reader forgets the previous body's trailers.
func TestBodyReaderTrailers(t *testing.T) {
	const input = "2\r\nhi\r\n0\r\nX-Checksum: abc \r\ngrpc-status: 0\r\n\r\nnext"
	for _, keep := range []bool{false, true} {
		r := bufio.NewReader(iotest.OneByteReader(strings.NewReader(input)))
		var b BodyReader
		b.Reset(r, BodyChunked, 0, 1024, nil)
		if keep {
			b.KeepTrailers(10)
		}
		if got, err := readBody(&b); got != "hi" || err != nil {
			t.Fatalf("keep=%v: body = %q, %v", keep, got, err)
		}
		tr := b.Trailers()
		if !keep {
			if tr != nil {
				t.Errorf("trailers kept without KeepTrailers: %q", tr)
			}
			continue
		}
		if len(tr) != 2 || string(tr[0].Name) != "x-checksum" || string(tr[0].Value) != "abc" ||
			string(tr[1].Name) != "grpc-status" || string(tr[1].Value) != "0" {
			t.Errorf("trailers = %q", tr)
		}
		b.Reset(r, BodyChunked, 0, 1024, nil)
		if b.Trailers() != nil {
			t.Error("Reset kept the previous body's trailers")
		}
	}
	bad := map[string]struct {
		input string
		want  error
	}{
		"bad name":  {"0\r\nX Y: 1\r\n\r\n", ErrHeaderName},
		"bad value": {"0\r\nX: a\x01b\r\n\r\n", ErrHeaderValue},
		"obs fold":  {"0\r\nX: a\r\n b\r\n\r\n", ErrObsFold},
		"too many":  {"0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", ErrTooManyHeaders},
		"no colon":  {"0\r\nnocolon\r\n\r\n", ErrHeaderName},
		"too large": {"0\r\nX: " + strings.Repeat("y", 2000) + "\r\n\r\n", ErrTrailersTooLarge},
		"truncated": {"0\r\nX: y\r\n", ErrTruncatedBody},
		"bare lf":   {"0\r\nX: y\n\r\n", ErrChunkFraming},
	}
	for name, tc := range bad {
		var b BodyReader
		b.Reset(bufio.NewReader(strings.NewReader(tc.input)), BodyChunked, 0, 1024, nil)
		b.KeepTrailers(2)
		if _, err := readBody(&b); !errors.Is(err, tc.want) {
			t.Errorf("%s: error = %v, want %v", name, err, tc.want)
		}
	}
}

// TestBodyReaderUnbuffered checks the zero-copy hand-off: a Content-Length
// body shows its rest as Unbuffered only once nothing of it is buffered,
// and Consume ends it; other framings never show one.
func TestBodyReaderUnbuffered(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("0123456789rest-of-body"), 16)
	var b BodyReader
	b.Reset(r, BodyLength, 100, 0, nil)
	if n := b.Unbuffered(); n != 100 {
		t.Fatalf("before any read: Unbuffered = %d, want 100", n)
	}
	if _, err := r.Peek(1); err != nil {
		t.Fatal(err)
	}
	if n := b.Unbuffered(); n != 0 {
		t.Fatalf("with bytes buffered: Unbuffered = %d, want 0", n)
	}
	p, err := b.Next()
	if err != nil || len(p) != 16 {
		t.Fatalf("Next = %q, %v", p, err)
	}
	if n := b.Unbuffered(); n != 84 {
		t.Fatalf("after the buffered piece: Unbuffered = %d, want 84", n)
	}
	b.Consume(80)
	if b.Done() || b.Unbuffered() != 4 {
		t.Fatalf("after Consume(80): done %v, Unbuffered %d", b.Done(), b.Unbuffered())
	}
	b.Consume(4)
	if !b.Done() || b.Unbuffered() != 0 {
		t.Fatalf("after the whole body: done %v, Unbuffered %d", b.Done(), b.Unbuffered())
	}
	if _, err := b.Next(); err != io.EOF {
		t.Fatalf("Next after the end: %v, want io.EOF", err)
	}
	b.Reset(bufio.NewReader(strings.NewReader("")), BodyChunked, 0, 0, nil)
	if n := b.Unbuffered(); n != 0 {
		t.Fatalf("chunked: Unbuffered = %d, want 0", n)
	}
}
