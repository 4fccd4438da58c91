package http1

import "testing"

func TestProperCaseNames(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\n" +
		"content-type: text/plain; charset=utf-8\r\n" +
		"x-b3-traceid: abc-def\r\n" +
		"foo$b#$are: x\r\n" +
		"te: trailers\r\n" +
		"x-2nd-try: a:b\r\n" +
		"ALREADY-Upper: v\r\n" +
		"\r\n" +
		"body: not a field\r\n"
	want := "HTTP/1.1 200 OK\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"X-B3-Traceid: abc-def\r\n" +
		"Foo$B#$Are: x\r\n" +
		"Te: trailers\r\n" +
		"X-2nd-Try: a:b\r\n" +
		"ALREADY-Upper: v\r\n" +
		"\r\n" +
		"body: not a field\r\n"
	b := []byte(head)
	ProperCaseNames(b)
	if string(b) != want {
		t.Errorf("got\n%q\nwant\n%q", b, want)
	}
	req := []byte("get /path-x HTTP/1.1\r\nhost: example.com\r\n\r\n")
	ProperCaseNames(req)
	if string(req) != "get /path-x HTTP/1.1\r\nHost: example.com\r\n\r\n" {
		t.Errorf("request line changed or host not cased: %q", req)
	}
	for _, s := range []string{"", "no line end", "HTTP/1.1 200 OK\r\n"} {
		ProperCaseNames([]byte(s)) // must not panic
	}
}
