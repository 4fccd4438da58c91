package http1

import "strconv"

// AppendRequestLine appends "METHOD path HTTP/1.1\r\n". The proxy always
// speaks HTTP/1.1 upstream, whatever the client spoke.
func AppendRequestLine(dst, method, path []byte) []byte {
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, path...)
	return append(dst, " HTTP/1.1\r\n"...)
}

// AppendStatusLine appends the status line for status with its standard
// reason phrase, as Envoy writes it whatever reason the upstream sent.
func AppendStatusLine(dst []byte, v Version, status int) []byte {
	if v == HTTP10 {
		dst = append(dst, "HTTP/1.0 "...)
	} else {
		dst = append(dst, "HTTP/1.1 "...)
	}
	dst = AppendDecimal(dst, int64(status))
	dst = append(dst, ' ')
	dst = append(dst, StatusText(status)...)
	return append(dst, "\r\n"...)
}

// AppendStatusLineReason appends an HTTP/1.1 status line for status with
// the given reason phrase (a received one, as Envoy's preserve_case
// formatter forwards it with forward_reason_phrase).
func AppendStatusLineReason(dst []byte, status int, reason []byte) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = AppendDecimal(dst, int64(status))
	dst = append(dst, ' ')
	dst = append(dst, reason...)
	return append(dst, "\r\n"...)
}

// AppendHeader appends "name: value\r\n".
func AppendHeader(dst, name, value []byte) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// AppendHeaderString is AppendHeader for string arguments.
func AppendHeaderString(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// AppendContentLength appends "content-length: n\r\n".
func AppendContentLength(dst []byte, n int64) []byte {
	dst = append(dst, "content-length: "...)
	dst = AppendDecimal(dst, n)
	return append(dst, "\r\n"...)
}

// AppendChunkHeader appends the size line of an n-byte chunk.
func AppendChunkHeader(dst []byte, n int) []byte {
	dst = strconv.AppendUint(dst, uint64(n), 16)
	return append(dst, "\r\n"...)
}

// CRLF ends a chunk's data, and a head.
const CRLF = "\r\n"

// LastChunk ends a chunked body that has no trailers.
const LastChunk = "0\r\n\r\n"

// Continue is the interim response a server sends to a request carrying
// Expect: 100-continue before it reads the body.
const Continue = "HTTP/1.1 100 Continue\r\n\r\n"
