package http1

import (
	"bufio"
	"errors"
	"io"
	"testing"
)

// loopReader hands out the same bytes forever, as a client sending the same
// request over a kept-alive connection would.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

// wrkRequest is what wrk sends; browserRequest is a heavier, realistic one.
const (
	wrkRequest     = "GET / HTTP/1.1\r\nHost: 127.0.0.1:10000\r\n\r\n"
	browserRequest = "GET /api/v1/items?limit=20&offset=40 HTTP/1.1\r\n" +
		"Host: shop.example.com\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
		"Accept: application/json, text/plain, */*\r\n" +
		"Accept-Language: en-GB,en;q=0.5\r\n" +
		"Accept-Encoding: gzip, deflate, br\r\n" +
		"Referer: https://shop.example.com/items\r\n" +
		"Cookie: session=0123456789abcdef0123456789abcdef; theme=dark\r\n" +
		"Connection: keep-alive\r\n" +
		"X-Request-Id: 5b1b1a7c-98b5-4a1a-9a3c-6f0b0a0e4d2f\r\n\r\n"
	smallResponse = "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sat, 21 Nov 2026 10:00:00 GMT\r\n" +
		"Content-Type: text/plain\r\nContent-Length: 128\r\nConnection: keep-alive\r\n\r\n" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func benchmarkRequest(b *testing.B, raw string) {
	r := bufio.NewReaderSize(&loopReader{data: []byte(raw)}, 4096)
	var (
		head []byte
		req  Request
	)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if head, err = ReadRequestHead(r, head, 60<<10); err != nil {
			b.Fatal(err)
		}
		if err := ParseRequest(head, &req, RequestOptions{MaxHeaders: 100}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRequestWrk(b *testing.B)     { benchmarkRequest(b, wrkRequest) }
func BenchmarkRequestBrowser(b *testing.B) { benchmarkRequest(b, browserRequest) }

func BenchmarkResponseWithBody(b *testing.B) {
	r := bufio.NewReaderSize(&loopReader{data: []byte(smallResponse)}, 4096)
	var (
		head []byte
		resp Response
		body BodyReader
	)
	b.SetBytes(int64(len(smallResponse)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if head, err = ReadHead(r, head, 60<<10); err != nil {
			b.Fatal(err)
		}
		if err := ParseResponse(head, &resp, 100); err != nil {
			b.Fatal(err)
		}
		body.Reset(r, resp.BodyKind(false), resp.ContentLength, 0, nil)
		for !body.Done() {
			if _, err := body.Next(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkChunkedBody(b *testing.B) {
	var raw []byte
	for range 16 {
		raw = AppendChunkHeader(raw, 256)
		raw = append(raw, make([]byte, 256)...)
		raw = append(raw, CRLF...)
	}
	raw = append(raw, LastChunk...)
	r := bufio.NewReaderSize(&loopReader{data: raw}, 4096)
	var body BodyReader
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(r, BodyChunked, 0, 1024, nil)
		for {
			_, err := body.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
