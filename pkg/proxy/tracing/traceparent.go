package tracing

import (
	"encoding/hex"
	"errors"
)

// TraceparentLen is the length of a version 00 W3C traceparent value.
const TraceparentLen = 55

// Traceparent is what a W3C traceparent value says.
type Traceparent struct {
	Trace   TraceID
	Span    SpanID
	Sampled bool
}

// ParseTraceparent reads a traceparent value as Envoy's W3C extractor
// does: the version 00 layout (version, trace id, parent id, flags, all
// lower-case hexadecimal), a version other than ff, neither id all zeros.
// Both tracers read it: OpenTelemetry's, and Zipkin's W3C fallback.
func ParseTraceparent(v string) (p Traceparent, err error) {
	if len(v) != TraceparentLen || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return p, errors.New("invalid traceparent")
	}
	version, traceHex, spanHex, flags := v[:2], v[3:35], v[36:52], v[53:]
	if !isLowerHex(version) || !isLowerHex(traceHex) || !isLowerHex(spanHex) || !isLowerHex(flags) {
		return p, errors.New("invalid traceparent: not lower-case hexadecimal")
	}
	if version == "ff" {
		return p, errors.New("invalid traceparent version")
	}
	_, _ = hex.Decode(p.Trace[:], []byte(traceHex))
	_, _ = hex.Decode(p.Span[:], []byte(spanHex))
	if p.Trace.IsZero() || p.Span.IsZero() {
		return p, errors.New("invalid traceparent: zero id")
	}
	var f [1]byte
	_, _ = hex.Decode(f[:], []byte(flags))
	p.Sampled = f[0]&1 == 1
	return p, nil
}

// AppendTraceparent appends the version 00 traceparent naming span id of
// trace as the parent, with the sampled flag.
func AppendTraceparent(b []byte, trace *TraceID, id *SpanID, sampled bool) []byte {
	b = append(b, "00-"...)
	b = trace.AppendHex(b)
	b = append(b, '-')
	b = id.AppendHex(b)
	if sampled {
		return append(b, "-01"...)
	}
	return append(b, "-00"...)
}

// isLowerHex reports whether s is lower-case hexadecimal digits only.
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
