package httpconn

import (
	"math"
	"strconv"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// maxGrpcTimeoutValue is the largest TimeoutValue gRPC allows: at most
// eight digits (gRPC's PROTOCOL-HTTP2.md).
const maxGrpcTimeoutValue = 99999999

// parseGrpcTimeout reads a grpc-timeout header value as Envoy's
// Grpc::Common::getGrpcTimeout does: a non-negative integer of at most
// maxGrpcTimeoutValue followed by one unit, H, M, S, m (milliseconds), u
// or n (rounded up to the next millisecond, Envoy's resolution). Anything
// else (empty, an unknown unit, a bad or too large number) is no timeout:
// ok is false.
func parseGrpcTimeout(v string) (d time.Duration, ok bool) {
	if len(v) < 2 {
		return 0, false
	}
	n, ok := grpcTimeoutValue(v[:len(v)-1])
	if !ok {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		return roundUpMs(time.Duration(n) * time.Microsecond), true
	case 'n':
		return roundUpMs(time.Duration(n)), true
	default:
		return 0, false
	}
	if n > int64(math.MaxInt64/unit) {
		// 99999999 hours does not fit a Duration: the longest one is
		// as good as infinite here.
		return math.MaxInt64, true
	}
	return time.Duration(n) * unit, true
}

// grpcTimeoutValue parses the number of a grpc-timeout. Like Envoy's
// absl::SimpleAtoi, it takes surrounding spaces and a leading '+'.
func grpcTimeoutValue(s string) (int64, bool) {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[0] == '+' {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > maxGrpcTimeoutValue {
			return 0, false
		}
	}
	return n, true
}

// roundUpMs rounds d up to a whole number of milliseconds.
func roundUpMs(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d
}

// appendGrpcTimeout appends d as a grpc-timeout value, as Envoy's
// Grpc::Common::toGrpcTimeout writes it: whole milliseconds, or the
// largest unit (S, M, H) that brings the number to at most eight digits,
// clipped to 99999999H.
func appendGrpcTimeout(b []byte, d time.Duration) []byte {
	n := d.Milliseconds()
	unit := byte('m')
	if n > maxGrpcTimeoutValue {
		n /= 1000
		unit = 'S'
	}
	for n > maxGrpcTimeoutValue {
		switch unit {
		case 'S':
			n /= 60
			unit = 'M'
		case 'M':
			n /= 60
			unit = 'H'
		default:
			n = maxGrpcTimeoutValue
		}
	}
	b = strconv.AppendInt(b, n, 10)
	return append(b, unit)
}

// applyGrpcTimeout sets the route timeout of a gRPC request on a route
// with the deprecated max_grpc_timeout, as Envoy's router does: the
// request's grpc-timeout (none: infinite), less the offset when that
// leaves some time, capped at the maximum (0: no cap); a timeout then in
// force also replaces grpc-timeout, so that the upstream knows it.
func (s *stream) applyGrpcTimeout(g *router.GrpcTimeout) {
	var t time.Duration
	if v, ok := s.reqHeaders.Get("grpc-timeout"); ok {
		t, _ = parseGrpcTimeout(v)
	}
	if g.Offset < t {
		t -= g.Offset
	}
	if g.Max != 0 && (t == 0 || t > g.Max) {
		t = g.Max
	}
	s.rqTimeout = t
	if t > 0 {
		s.grpcTimeoutBuf = appendGrpcTimeout(s.grpcTimeoutBuf[:0], t)
		s.reqHeaders.Set("grpc-timeout", view(s.grpcTimeoutBuf))
	}
}
