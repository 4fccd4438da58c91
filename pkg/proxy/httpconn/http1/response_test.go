package http1

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestParseResponse(t *testing.T) {
	type want struct {
		version       Version
		status        int
		reason        string
		contentLength int64
		kind          BodyKind
		reusable      bool
	}
	tests := map[string]struct {
		raw     string
		head    bool // the request was HEAD
		want    want
		wantErr *Error
	}{
		"content-length": {
			raw:  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
			want: want{HTTP11, 200, "OK", 5, BodyLength, true},
		},
		"chunked": {
			raw:  "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n",
			want: want{HTTP11, 201, "Created", -1, BodyChunked, true},
		},
		"chunked overrides length and closes": {
			raw:  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
			want: want{HTTP11, 200, "OK", -1, BodyChunked, false},
		},
		"gzip last means until close": {
			raw:  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
			want: want{HTTP11, 200, "OK", -1, BodyUntilClose, false},
		},
		"no framing means until close": {
			raw:  "HTTP/1.1 200 OK\r\n\r\n",
			want: want{HTTP11, 200, "OK", -1, BodyUntilClose, false},
		},
		"no reason phrase, no space": {
			raw:  "HTTP/1.1 204\r\n\r\n",
			want: want{HTTP11, 204, "", -1, BodyNone, true},
		},
		"empty reason phrase": {
			raw:  "HTTP/1.1 299 \r\nContent-Length: 0\r\n\r\n",
			want: want{HTTP11, 299, "", 0, BodyLength, true},
		},
		"304 has no body": {
			raw:  "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n",
			want: want{HTTP11, 304, "Not Modified", 50, BodyNone, true},
		},
		"head response has no body": {
			raw: "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", head: true,
			want: want{HTTP11, 200, "OK", 50, BodyNone, true},
		},
		"100 continue": {
			raw:  "HTTP/1.1 100 Continue\r\n\r\n",
			want: want{HTTP11, 100, "Continue", -1, BodyNone, true},
		},
		"connection close": {
			raw:  "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n",
			want: want{HTTP11, 200, "OK", 1, BodyLength, false},
		},
		"http/1.0 closes by default": {
			raw:  "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
			want: want{HTTP10, 200, "OK", 1, BodyLength, false},
		},
		"http/1.0 keep-alive": {
			raw:  "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n",
			want: want{HTTP10, 200, "OK", 1, BodyLength, true},
		},
		"http/1.0 with transfer-encoding is faulty": {
			raw:  "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
			want: want{HTTP10, 200, "OK", -1, BodyUntilClose, false},
		},

		"short status line":        {raw: "HTTP/1.1 20\r\n\r\n", wantErr: ErrStatusLine},
		"letters in status":        {raw: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: ErrStatusCode},
		"status below 100":         {raw: "HTTP/1.1 099 Low\r\n\r\n", wantErr: ErrStatusCode},
		"status above 599":         {raw: "HTTP/1.1 600 High\r\n\r\n", wantErr: ErrStatusCode},
		"bad version":              {raw: "HTTX/1.1 200 OK\r\n\r\n", wantErr: ErrVersion},
		"control in reason":        {raw: "HTTP/1.1 200 O\x01K\r\n\r\n", wantErr: ErrStatusLine},
		"conflicting lengths":      {raw: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", wantErr: ErrContentLength},
		"non-numeric length":       {raw: "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", wantErr: ErrContentLength},
		"obs-fold in response":     {raw: "HTTP/1.1 200 OK\r\nA: b\r\n\tc\r\n\r\n", wantErr: ErrObsFold},
		"missing space after code": {raw: "HTTP/1.1 200OK\r\n\r\n", wantErr: ErrStatusLine},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			head, err := ReadHead(bufio.NewReader(strings.NewReader(tc.raw)), nil, 1<<16)
			if err != nil {
				t.Fatal(err)
			}
			var resp Response
			err = ParseResponse(head, &resp, 100)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			kind := resp.BodyKind(tc.head)
			got := want{resp.Version, resp.Status, string(resp.Reason), resp.ContentLength, kind, resp.Reusable(kind)}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
