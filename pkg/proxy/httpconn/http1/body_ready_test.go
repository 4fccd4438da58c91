package http1

import (
	"bufio"
	"strings"
	"testing"
)

// TestBodyReaderReady checks that Ready says whether Next can answer from
// the buffered bytes alone, chunked framing looked at without reading.
func TestBodyReaderReady(t *testing.T) {
	cases := []struct {
		name    string
		kind    BodyKind
		length  int64
		in      string
		skip    int // pieces read with Next before asking
		want    bool
		trailer int
	}{
		{name: "length, nothing yet", kind: BodyLength, length: 3, in: "", want: false},
		{name: "length, a byte", kind: BodyLength, length: 3, in: "a", want: true},
		{name: "length, read to its end", kind: BodyLength, length: 1, in: "a", skip: 1, want: true},
		{name: "chunk size only", kind: BodyChunked, in: "5\r\n", want: false},
		{name: "partial size line", kind: BodyChunked, in: "5", want: false},
		{name: "chunk with data", kind: BodyChunked, in: "5\r\nab", want: true},
		{name: "only the CRLF after a chunk", kind: BodyChunked, in: "2\r\nab\r\n", skip: 1, want: false},
		{name: "CRLF and half a size line", kind: BodyChunked, in: "2\r\nab\r\n3", skip: 1, want: false},
		{name: "CRLF and the next chunk's data", kind: BodyChunked, in: "2\r\nab\r\n3\r\nc", skip: 1, want: true},
		{name: "last chunk without the final line", kind: BodyChunked, in: "2\r\nab\r\n0\r\n", skip: 1, want: false},
		{name: "last chunk and the final line", kind: BodyChunked, in: "2\r\nab\r\n0\r\n\r\n", skip: 1, want: true},
		{name: "a trailer, then the final line", kind: BodyChunked, in: "0\r\nx-t: 1\r\n\r\n", want: true, trailer: 100},
		{name: "a trailer not ended", kind: BodyChunked, in: "0\r\nx-t: 1\r\n", want: false, trailer: 100},
		{name: "bad framing is for Next to report", kind: BodyChunked, in: "2\r\nabXY", skip: 1, want: true},
		{name: "bad size is for Next to report", kind: BodyChunked, in: "zz\r\n", want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b BodyReader
			r := bufio.NewReader(strings.NewReader(tc.in))
			if tc.in != "" {
				// Everything the "peer" sent is buffered.
				_, _ = r.Peek(len(tc.in))
			}
			b.Reset(r, tc.kind, tc.length, tc.trailer, nil)
			for range tc.skip {
				if _, err := b.Next(); err != nil {
					t.Fatalf("Next: %v", err)
				}
			}
			if got := b.Ready(); got != tc.want {
				t.Fatalf("Ready() = %t, want %t", got, tc.want)
			}
		})
	}
}
