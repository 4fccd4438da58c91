package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// maxFuzzMessages bounds how many messages one input is read as.
const maxFuzzMessages = 8

func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n",
		"GET http://a:1/b?c HTTP/1.1\r\nHost: x\r\nConnection: close, x-y\r\n\r\n",
		"\r\nGET / HTTP/1.0\nConnection: keep-alive\n\n",
		"PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1, 1\r\n\r\nz",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 64)
		var (
			head []byte
			req  Request
			body BodyReader
		)
		for range maxFuzzMessages {
			var err error
			head, err = ReadRequestHead(r, head, 4096)
			if err != nil {
				return
			}
			if len(head) > 4096 {
				t.Fatalf("head of %d bytes passed a 4096-byte limit", len(head))
			}
			if err := ParseRequest(head, &req, RequestOptions{MaxHeaders: 32}); err != nil {
				if s := StatusOf(err); s < 400 || s > 505 {
					t.Fatalf("error %v maps to status %d", err, s)
				}
				return
			}
			checkRequest(t, &req)
			roundTripRequest(t, &req)
			kind, n := BodyNone, int64(0)
			switch {
			case req.Chunked:
				kind = BodyChunked
			case req.ContentLength > 0:
				kind, n = BodyLength, req.ContentLength
			}
			body.Reset(r, kind, n, 1024, nil)
			got := int64(0)
			for {
				p, err := body.Next()
				got += int64(len(p))
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return
				}
			}
			if kind == BodyLength && got != n {
				t.Fatalf("read %d body bytes of a %d-byte body", got, n)
			}
			if got > int64(len(data)) {
				t.Fatalf("read %d body bytes from %d input bytes", got, len(data))
			}
		}
	})
}

// FuzzRequestEarlyCheck compares ReadRequestHead, which refuses a bad
// method as its bytes arrive, with ReadHead and ParseRequest, which judge
// the whole head: the early check must never refuse a request the parser
// accepts, nor accept what ReadHead would not read.
func FuzzRequestEarlyCheck(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"\r\n\nPOST /p HTTP/1.1\r\nHost: h\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
		" GET / HTTP/1.1\r\n\r\n",
		"GE(T / HTTP/1.1\r\nHost: h\r\n\r\n",
		"\rGET / HTTP/1.1\r\n\r\n",
		"GET\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	} {
		f.Add([]byte(seed), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		// Buffers from 16 bytes up: methods may span fills or outgrow
		// the buffer.
		bufSize := 16 + int(size)
		early, earlyErr := ReadRequestHead(bufio.NewReaderSize(bytes.NewReader(data), bufSize), nil, 4096)
		whole, wholeErr := ReadHead(bufio.NewReaderSize(bytes.NewReader(data), bufSize), nil, 4096)
		switch {
		case earlyErr == nil:
			if wholeErr != nil || !bytes.Equal(early, whole) {
				t.Fatalf("early check read %q, ReadHead %q (%v)", early, whole, wholeErr)
			}
		case errors.Is(earlyErr, ErrMethod), errors.Is(earlyErr, ErrRequestLine):
			if wholeErr != nil {
				return
			}
			var req Request
			if err := ParseRequest(whole, &req, RequestOptions{MaxHeaders: 32}); err == nil {
				t.Fatalf("early check refused %q (%v), which parses", whole, earlyErr)
			}
		default:
			if !errors.Is(wholeErr, earlyErr) {
				t.Fatalf("early check failed with %v, ReadHead with %v", earlyErr, wholeErr)
			}
		}
	})
}

// checkRequest verifies the invariants every parsed request holds.
func checkRequest(t *testing.T, req *Request) {
	t.Helper()
	if req.Chunked && req.ContentLength >= 0 {
		t.Fatal("a request was both chunked and content-length framed")
	}
	if !isToken(req.Method) {
		t.Fatalf("method %q is not a token", req.Method)
	}
	if len(req.Path) == 0 && string(req.Method) != "CONNECT" {
		t.Fatalf("empty path for %q", req.Target)
	}
	for _, h := range req.Headers {
		if !isToken(h.Name) || !bytes.Equal(h.Name, bytes.ToLower(h.Name)) {
			t.Fatalf("header name %q is not a lower-case token", h.Name)
		}
		if bytes.ContainsAny(h.Value, "\r\n\x00") {
			t.Fatalf("header value %q holds a line break or NUL", h.Value)
		}
		if len(h.Value) > 0 && (h.Value[0] == ' ' || h.Value[len(h.Value)-1] == ' ') {
			t.Fatalf("header value %q was not trimmed", h.Value)
		}
	}
}

// roundTripRequest serialises req as the proxy would and parses it back:
// what the proxy sends must mean the same to the next hop.
func roundTripRequest(t *testing.T, req *Request) {
	t.Helper()
	if req.Version != HTTP11 || len(req.Path) == 0 || req.Path[0] != '/' {
		return
	}
	out := AppendRequestLine(nil, req.Method, req.Path)
	for _, h := range req.Headers {
		out = AppendHeader(out, h.Name, h.Value)
	}
	out = append(out, CRLF...)
	var again Request
	if err := ParseRequest(out, &again, RequestOptions{MaxHeaders: 32}); err != nil {
		t.Fatalf("re-serialised request %q does not parse: %v", out, err)
	}
	if !bytes.Equal(again.Method, req.Method) || !bytes.Equal(again.Path, req.Path) ||
		again.ContentLength != req.ContentLength || again.Chunked != req.Chunked || len(again.Headers) != len(req.Headers) {
		t.Fatalf("re-serialised request %q parses differently", out)
	}
}

func FuzzResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 204\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
	} {
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, isHead bool) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 64)
		var (
			head []byte
			resp Response
			body BodyReader
		)
		for range maxFuzzMessages {
			var err error
			if head, err = ReadHead(r, head, 4096); err != nil {
				return
			}
			if err := ParseResponse(head, &resp, 32); err != nil {
				return
			}
			if resp.Status < 100 || resp.Status > 599 {
				t.Fatalf("status %d accepted", resp.Status)
			}
			kind := resp.BodyKind(isHead)
			if kind == BodyLength && resp.ContentLength < 0 {
				t.Fatal("length framing without a length")
			}
			body.Reset(r, kind, resp.ContentLength, 1024, nil)
			for {
				_, err := body.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return
				}
			}
			if !resp.Reusable(kind) {
				return
			}
		}
	})
}

// FuzzChunkedRoundTrip encodes arbitrary data in chunks the way the proxy
// writes them and checks that the decoder gives back the same bytes.
func FuzzChunkedRoundTrip(f *testing.F) {
	f.Add([]byte("hello, world"), uint8(5))
	f.Add([]byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		step := int(size) + 1
		var enc []byte
		for i := 0; i < len(data); i += step {
			chunk := data[i:min(i+step, len(data))]
			enc = AppendChunkHeader(enc, len(chunk))
			enc = append(enc, chunk...)
			enc = append(enc, CRLF...)
		}
		enc = append(enc, LastChunk...)
		var b BodyReader
		b.Reset(bufio.NewReaderSize(bytes.NewReader(enc), 16), BodyChunked, 0, 1024, nil)
		got, err := readBody(&b)
		if err != nil || got != string(data) {
			t.Fatalf("decoded %q, %v; want %q", got, err, data)
		}
	})
}
