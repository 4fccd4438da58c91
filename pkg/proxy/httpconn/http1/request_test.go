package http1

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

// parseRequestString reads one head from raw and parses it.
func parseRequestString(raw string) (*Request, error) {
	head, err := ReadHead(bufio.NewReader(strings.NewReader(raw)), nil, 1<<16)
	if err != nil {
		return nil, err
	}
	req := &Request{}
	return req, ParseRequest(head, req, RequestOptions{MaxHeaders: 100})
}

func TestParseRequest(t *testing.T) {
	type want struct {
		method, path, authority string
		version                 Version
		contentLength           int64
		chunked, keepAlive      bool
		expect100, absolute     bool
		headers                 int
		connTokens              int
	}
	tests := map[string]struct {
		raw     string
		want    want
		wantErr *Error
	}{
		"simple get": {
			raw:  "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n",
			want: want{method: "GET", path: "/a/b?c=d", authority: "example.com", version: HTTP11, contentLength: -1, keepAlive: true, headers: 2},
		},
		"bare lf line endings": {
			raw:  "GET / HTTP/1.1\nHost: h\n\n",
			want: want{method: "GET", path: "/", authority: "h", version: HTTP11, contentLength: -1, keepAlive: true, headers: 1},
		},
		"leading empty lines are skipped": {
			raw:  "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
			want: want{method: "GET", path: "/", authority: "h", version: HTTP11, contentLength: -1, keepAlive: true, headers: 1},
		},
		"post with content-length": {
			raw:  "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n",
			want: want{method: "POST", path: "/p", authority: "h", version: HTTP11, contentLength: 12, keepAlive: true, headers: 2},
		},
		"identical content-length list": {
			raw:  "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n",
			want: want{method: "POST", path: "/p", authority: "h", version: HTTP11, contentLength: 5, keepAlive: true, headers: 3},
		},
		"chunked post": {
			raw:  "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n",
			want: want{method: "POST", path: "/p", authority: "h", version: HTTP11, contentLength: -1, chunked: true, keepAlive: true, headers: 2},
		},
		"connection close": {
			raw:  "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n",
			want: want{method: "GET", path: "/", authority: "h", version: HTTP11, contentLength: -1, headers: 2},
		},
		"connection names hop-by-hop fields": {
			raw:  "GET / HTTP/1.1\r\nHost: h\r\nConnection: x-a, , X-B\r\n\r\n",
			want: want{method: "GET", path: "/", authority: "h", version: HTTP11, contentLength: -1, keepAlive: true, headers: 2, connTokens: 2},
		},
		"http/1.0 without host closes": {
			raw:  "GET / HTTP/1.0\r\n\r\n",
			want: want{method: "GET", path: "/", version: HTTP10, contentLength: -1},
		},
		"http/1.0 keep-alive": {
			raw:  "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: h\r\n\r\n",
			want: want{method: "GET", path: "/", authority: "h", version: HTTP10, contentLength: -1, keepAlive: true, headers: 2},
		},
		"http/1.2 is read as 1.1": {
			raw:  "GET / HTTP/1.2\r\nHost: h\r\n\r\n",
			want: want{method: "GET", path: "/", authority: "h", version: HTTP11, contentLength: -1, keepAlive: true, headers: 1},
		},
		"expect 100-continue": {
			raw:  "PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n",
			want: want{method: "PUT", path: "/u", authority: "h", version: HTTP11, contentLength: 3, keepAlive: true, expect100: true, headers: 3},
		},
		"absolute form takes the target's authority": {
			raw:  "GET http://origin:8080/x?y HTTP/1.1\r\nHost: other\r\n\r\n",
			want: want{method: "GET", path: "/x?y", authority: "origin:8080", version: HTTP11, contentLength: -1, keepAlive: true, absolute: true, headers: 1},
		},
		"absolute form without path": {
			raw:  "GET http://origin HTTP/1.1\r\nHost: origin\r\n\r\n",
			want: want{method: "GET", path: "/", authority: "origin", version: HTTP11, contentLength: -1, keepAlive: true, absolute: true, headers: 1},
		},
		"absolute form with query only": {
			raw:  "GET http://origin?q=1 HTTP/1.1\r\nHost: origin\r\n\r\n",
			want: want{method: "GET", path: "/?q=1", authority: "origin", version: HTTP11, contentLength: -1, keepAlive: true, absolute: true, headers: 1},
		},
		"asterisk form": {
			raw:  "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
			want: want{method: "OPTIONS", path: "*", authority: "h", version: HTTP11, contentLength: -1, keepAlive: true, headers: 1},
		},
		"authority form for connect": {
			raw:  "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n",
			want: want{method: "CONNECT", path: "", authority: "h:443", version: HTTP11, contentLength: -1, keepAlive: true, headers: 1},
		},
		"empty header value": {
			raw:  "GET / HTTP/1.1\r\nHost: h\r\nX-Empty:\r\n\r\n",
			want: want{method: "GET", path: "/", authority: "h", version: HTTP11, contentLength: -1, keepAlive: true, headers: 2},
		},
		"utf-8 in target is passed on": {
			raw:  "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n",
			want: want{method: "GET", path: "/caf\xc3\xa9", authority: "h", version: HTTP11, contentLength: -1, keepAlive: true, headers: 1},
		},

		"missing host":                    {raw: "GET / HTTP/1.1\r\n\r\n", wantErr: ErrMissingHost},
		"two hosts":                       {raw: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", wantErr: ErrMultipleHost},
		"obs-fold":                        {raw: "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", wantErr: ErrObsFold},
		"space before colon":              {raw: "GET / HTTP/1.1\r\nHost : h\r\n\r\n", wantErr: ErrHeaderName},
		"empty header name":               {raw: "GET / HTTP/1.1\r\n: h\r\n\r\n", wantErr: ErrHeaderName},
		"no colon":                        {raw: "GET / HTTP/1.1\r\nHost h\r\n\r\n", wantErr: ErrHeaderName},
		"nul in value":                    {raw: "GET / HTTP/1.1\r\nHost: h\x00\r\n\r\n", wantErr: ErrHeaderValue},
		"bare cr in value":                {raw: "GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", wantErr: ErrBareCR},
		"bare cr in request line":         {raw: "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", wantErr: ErrBareCR},
		"lower-case version":              {raw: "GET / http/1.1\r\nHost: h\r\n\r\n", wantErr: ErrVersion},
		"http/2.0 over http/1":            {raw: "GET / HTTP/2.0\r\nHost: h\r\n\r\n", wantErr: ErrVersionNotSupported},
		"http/0.9 request line":           {raw: "GET /\r\n\r\n", wantErr: ErrRequestLine},
		"double space":                    {raw: "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", wantErr: ErrRequestLine},
		"method with separator":           {raw: "GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", wantErr: ErrMethod},
		"control character in target":     {raw: "GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n", wantErr: ErrTarget},
		"relative target":                 {raw: "GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", wantErr: ErrTarget},
		"content-length and chunked":      {raw: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", wantErr: ErrLengthAndEncoding},
		"conflicting content-lengths":     {raw: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", wantErr: ErrContentLength},
		"conflicting content-length list": {raw: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\n", wantErr: ErrContentLength},
		"signed content-length":           {raw: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\n", wantErr: ErrContentLength},
		"empty content-length":            {raw: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", wantErr: ErrContentLength},
		"huge content-length":             {raw: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9999999999999999999\r\n\r\n", wantErr: ErrContentLength},
		"chunked not last":                {raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", wantErr: ErrTransferEncoding},
		"unknown coding":                  {raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", wantErr: ErrUnsupportedEncoding},
		"gzip then chunked":               {raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", wantErr: ErrTransferEncoding},
		"two transfer-encodings":          {raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", wantErr: ErrTransferEncoding},
		"transfer-encoding in 1.0":        {raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", wantErr: ErrTransferEncoding},
		"absolute form without host":      {raw: "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", wantErr: ErrTarget},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req, err := parseRequestString(tc.raw)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			got := want{
				method: string(req.Method), path: string(req.Path), authority: string(req.Authority),
				version: req.Version, contentLength: req.ContentLength, chunked: req.Chunked,
				keepAlive: req.KeepAlive, expect100: req.Expect100, absolute: req.AbsoluteForm,
				headers: len(req.Headers), connTokens: len(req.ConnectionTokens),
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseRequestLowerCasesNames(t *testing.T) {
	req, err := parseRequestString("GET / HTTP/1.1\r\nHost: h\r\nX-Mixed-Case:  v  1 \r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := req.Headers.Get("x-mixed-case")
	if !ok || string(v) != "v  1" {
		t.Fatalf("x-mixed-case = %q, %v; want %q, true", v, ok, "v  1")
	}
	if _, ok := req.Headers.Get("X-Mixed-Case"); ok {
		t.Error("lookups take lower-case names; an upper-case one must not match")
	}
}

func TestParseRequestHeaderLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: h\r\n")
	for range 100 {
		b.WriteString("X: y\r\n")
	}
	b.WriteString("\r\n")
	head, err := ReadHead(bufio.NewReader(strings.NewReader(b.String())), nil, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	var req Request
	if err := ParseRequest(head, &req, RequestOptions{MaxHeaders: 100}); !errors.Is(err, ErrTooManyHeaders) {
		t.Fatalf("101 headers with a limit of 100: error = %v, want %v", err, ErrTooManyHeaders)
	}
	if StatusOf(ErrTooManyHeaders) != 431 {
		t.Errorf("StatusOf(too many headers) = %d, want 431", StatusOf(ErrTooManyHeaders))
	}
	if err := ParseRequest(head, &req, RequestOptions{MaxHeaders: 101}); err != nil {
		t.Fatalf("101 headers with a limit of 101: %v", err)
	}
}

// TestParseRequestReusesRequest checks that a reused Request carries
// nothing over from the previous message.
func TestParseRequestReusesRequest(t *testing.T) {
	var req Request
	first := []byte("POST http://a?x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nConnection: x-hop\r\nExpect: 100-continue\r\n\r\n")
	if err := ParseRequest(first, &req, RequestOptions{MaxHeaders: 100}); err != nil {
		t.Fatal(err)
	}
	second := []byte("GET /b HTTP/1.1\r\nHost: b\r\n\r\n")
	if err := ParseRequest(second, &req, RequestOptions{MaxHeaders: 100}); err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != -1 || req.Expect100 || req.AbsoluteForm || len(req.ConnectionTokens) != 0 ||
		string(req.Path) != "/b" || string(req.Authority) != "b" || len(req.Headers) != 1 {
		t.Errorf("second request kept state from the first: %+v", req)
	}
}

// TestParseRequestAllowChunkedLength checks allow_chunked_length: a
// request with both framings is read as chunked, without its
// Content-Length; other transfer codings are still refused.
func TestParseRequestAllowChunkedLength(t *testing.T) {
	opts := RequestOptions{MaxHeaders: 100, AllowChunkedLength: true}
	var req Request
	head := []byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n")
	if err := ParseRequest(head, &req, opts); err != nil {
		t.Fatal(err)
	}
	if !req.Chunked || req.ContentLength != -1 {
		t.Errorf("Chunked = %v, ContentLength = %d; want chunked, -1", req.Chunked, req.ContentLength)
	}
	var names []string
	for _, h := range req.Headers {
		names = append(names, string(h.Name))
	}
	if got := strings.Join(names, ","); got != "host,x-a,transfer-encoding" {
		t.Errorf("headers = %s, want host,x-a,transfer-encoding", got)
	}
	gzip := []byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: gzip\r\n\r\n")
	if err := ParseRequest(gzip, &req, opts); err == nil || errors.Is(err, ErrLengthAndEncoding) {
		t.Errorf("gzip with a length: error = %v, want a transfer-encoding error", err)
	}
	if err := ParseRequest(head, &req, RequestOptions{MaxHeaders: 100}); !errors.Is(err, ErrLengthAndEncoding) {
		t.Errorf("without the option: error = %v, want %v", err, ErrLengthAndEncoding)
	}
}

// TestFieldNameBytes tries every byte value in a header name: a tchar
// (RFC 9110 §5.6.2) is accepted and lower-cased, any other byte is
// ErrHeaderName.
func TestFieldNameBytes(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if b == ':' || b == '\n' || b == '\r' {
			continue // they end the name or the line: tested above
		}
		head := []byte("GET / HTTP/1.1\r\nHost: h\r\nX-" + string([]byte{b}) + "Y: 1\r\n\r\n")
		var req Request
		err := ParseRequest(head, &req, RequestOptions{MaxHeaders: 100})
		if !isTchar(b) {
			if !errors.Is(err, ErrHeaderName) {
				t.Errorf("byte %#x in a name: %v, want ErrHeaderName", b, err)
			}
			continue
		}
		want := strings.ToLower("x-" + string([]byte{b}) + "y")
		if err != nil || len(req.Headers) != 2 || string(req.Headers[1].Name) != want {
			t.Errorf("byte %#x in a name: %v, fields %q, want the name %q", b, err, req.Headers, want)
		}
	}
}
