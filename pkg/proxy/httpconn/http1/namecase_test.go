package http1

import "testing"

func TestNameCasesRecordAndFormat(t *testing.T) {
	head := []byte("GET / HTTP/1.1\r\nHOST: a\r\nX-My-HEADER: 1\r\nx-my-header: 2\r\nx-lower: 3\r\n\r\n")
	raw := append([]byte(nil), head...)
	var req Request
	if err := ParseRequest(head, &req, RequestOptions{MaxHeaders: 100}); err != nil {
		t.Fatal(err)
	}
	var n NameCases
	n.Record(head, raw, req.Headers)
	// A field whose name is not a slice of head is skipped.
	n.Record(head, raw, Headers{{Name: []byte("x-elsewhere")}})

	out := []byte("GET / HTTP/1.1\r\nhost: a\r\nx-my-header: 1\r\nx-lower: 3\r\nx-request-id: r\r\n\r\n")
	FormatNames(out, &n, false)
	want := "GET / HTTP/1.1\r\nHOST: a\r\nX-My-HEADER: 1\r\nx-lower: 3\r\nx-request-id: r\r\n\r\n"
	if string(out) != want {
		t.Errorf("DEFAULT:\n got %q\nwant %q", out, want)
	}
	out = []byte("GET / HTTP/1.1\r\nhost: a\r\nx-request-id: r\r\nx-elsewhere: e\r\n\r\n")
	FormatNames(out, &n, true)
	want = "GET / HTTP/1.1\r\nHOST: a\r\nX-Request-Id: r\r\nX-Elsewhere: e\r\n\r\n"
	if string(out) != want {
		t.Errorf("PROPER_CASE:\n got %q\nwant %q", out, want)
	}
	n.Reset()
	out = []byte("HTTP/1.1 200 OK\r\nhost: a\r\n\r\n")
	FormatNames(out, &n, false)
	if string(out) != "HTTP/1.1 200 OK\r\nhost: a\r\n\r\n" {
		t.Errorf("after Reset: %q", out)
	}
}
