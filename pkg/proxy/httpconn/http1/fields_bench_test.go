package http1

import "testing"

// BenchmarkFieldsSmall parses the header sections of the request and the
// response h1count (test/bench/h1count) exchanges: two short fields each.
func BenchmarkFieldsSmall(b *testing.B) {
	req := []byte("Host: 127.0.0.1\r\nUser-Agent: h1count\r\n\r\n")
	resp := []byte("Content-Type: text/plain\r\nContent-Length: 128\r\n\r\n")
	var dst Headers
	for b.Loop() {
		var err error
		if dst, err = parseFields(req, dst, 100); err != nil {
			b.Fatal(err)
		}
		if dst, err = parseFields(resp, dst, 100); err != nil {
			b.Fatal(err)
		}
	}
}
