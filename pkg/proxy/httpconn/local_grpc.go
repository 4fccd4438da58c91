package httpconn

import (
	"strconv"
	"strings"
)

// grpcRequest reports whether the request is gRPC, by its content-type,
// as Envoy decides it: its local replies then take gRPC's form.
func (s *stream) grpcRequest() bool {
	ct, ok := s.reqHeaders.Get("content-type")
	if !ok || !strings.HasPrefix(ct, "application/grpc") {
		return false
	}
	rest := ct[len("application/grpc"):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}

// grpcLocalReply answers a gRPC request in gRPC's trailers-only form, as
// Envoy's local replies do: status 200, content-type application/grpc,
// grpc-status, and the body as grpc-message (percent-encoded), with no
// body.
func (s *stream) grpcLocalReply(grpcStatus int64, body string) {
	s.status = 200
	h := &s.respHeaders
	h.Add("content-type", "application/grpc")
	h.Add("grpc-status", grpcStatusText(grpcStatus))
	if body != "" && !s.isHead {
		h.Add("grpc-message", percentEncode(body))
	}
	s.finishLocalWith("", false)
}

// grpcStatusText renders a gRPC status; the defined ones (0 to 16) come
// from a table, so that the reply allocates nothing for them.
func grpcStatusText(code int64) string {
	const table = "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16"
	if code >= 0 && code <= 9 {
		return table[2*code : 2*code+1]
	}
	if code >= 10 && code <= 16 {
		i := 20 + 3*(code-10)
		return table[i : i+2]
	}
	return strconv.FormatInt(code, 10)
}

// percentEncode encodes what grpc-message may not carry as is: '%' and
// bytes outside printable ASCII.
func percentEncode(v string) string {
	const hex = "0123456789ABCDEF"
	clean := true
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' || c == '%' {
			clean = false
			break
		}
	}
	if clean {
		return v
	}
	b := make([]byte, 0, len(v)+8)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < ' ' || c > '~' || c == '%' {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}
