package opentelemetry

import (
	"encoding/binary"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// The W3C Trace Context headers.
const (
	traceparent = "traceparent"
	tracestate  = "tracestate"
	// traceparentLen is the length of a version 00 traceparent value.
	traceparentLen = tracing.TraceparentLen
)

// parent is a trace context read from traceparent and tracestate.
type parent struct {
	trace   tracing.TraceID
	span    tracing.SpanID
	sampled bool
	state   string
}

// extract reads the W3C trace context of a request, as Envoy's
// OpenTelemetry SpanContextExtractor does: a traceparent of the version
// 00 layout (version, trace id, parent id, flags, all lower-case hex),
// with neither id all zeros and a version other than ff. found is false,
// with no error, when the request carries no traceparent (most requests:
// a flag, which costs less to test than an error sentinel).
func extract(h tracing.Headers) (p parent, found bool, err error) {
	v, ok := h.Get(traceparent)
	if !ok {
		return parent{}, false, nil
	}
	if p, err = parseTraceparent(v); err != nil {
		return p, true, err
	}
	if s, ok := h.Get(tracestate); ok {
		p.state = strings.Clone(s)
	}
	return p, true, nil
}

// parseTraceparent reads a traceparent value (extract's rules); the
// parent's state is left empty.
func parseTraceparent(v string) (parent, error) {
	tp, err := tracing.ParseTraceparent(v)
	return parent{trace: tp.Trace, span: tp.Span, sampled: tp.Sampled}, err
}

// w3c propagates spans in traceparent and tracestate.
type w3c struct{}

// Inject implements tracing.Propagator: traceparent names s as the
// parent, with its sampling flag; tracestate passes on what was received.
func (w3c) Inject(s *tracing.Span, h tracing.HeaderSetter) {
	s.Scratch = putTraceparent(s.Scratch, &s.Trace, &s.ID, s.Sampled)
	setW3C(h, unsafeString(s.Scratch), s.TraceState)
}

// putTraceparent writes a version 00 traceparent into b's storage (grown
// to its 55 bytes if need be) and returns it: written in place, its layout
// fixed (version, trace id, parent id, flags), rather than appended piece
// by piece.
func putTraceparent(b []byte, trace *tracing.TraceID, id *tracing.SpanID, sampled bool) []byte {
	if cap(b) < traceparentLen {
		b = make([]byte, 0, traceparentLen)
	}
	b = b[:traceparentLen]
	p := (*[traceparentLen]byte)(b)
	p[0], p[1], p[2], p[35], p[52], p[53] = '0', '0', '-', '-', '-', '0'
	// putIDs's calls, without its own: every sampled request runs this.
	putHex8((*[16]byte)(p[3:19]), (*[8]byte)(trace[:8]))
	putHex8((*[16]byte)(p[19:35]), (*[8]byte)(trace[8:]))
	putHex8((*[16]byte)(p[36:52]), (*[8]byte)(id))
	p[54] = '0'
	if sampled {
		p[54] = '1'
	}
	return b
}

// putIDs writes a traceparent's trace and parent ids, in hexadecimal at
// their places in p.
func putIDs(p *[traceparentLen]byte, trace *tracing.TraceID, id *tracing.SpanID) {
	putHex8((*[16]byte)(p[3:19]), (*[8]byte)(trace[:8]))
	putHex8((*[16]byte)(p[19:35]), (*[8]byte)(trace[8:]))
	putHex8((*[16]byte)(p[36:52]), (*[8]byte)(id))
}

// hexPairs holds each byte's two lower-case hexadecimal digits, the first
// in the low byte (little-endian order).
var hexPairs = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for i := range t {
		t[i] = uint16(digits[i>>4]) | uint16(digits[i&15])<<8
	}
	return t
}()

// putHex8 writes src in hexadecimal into dst: a table look-up and one
// store per byte.
func putHex8(dst *[16]byte, src *[8]byte) {
	le := binary.LittleEndian
	le.PutUint16(dst[0:], hexPairs[src[0]])
	le.PutUint16(dst[2:], hexPairs[src[1]])
	le.PutUint16(dst[4:], hexPairs[src[2]])
	le.PutUint16(dst[6:], hexPairs[src[3]])
	le.PutUint16(dst[8:], hexPairs[src[4]])
	le.PutUint16(dst[10:], hexPairs[src[5]])
	le.PutUint16(dst[12:], hexPairs[src[6]])
	le.PutUint16(dst[14:], hexPairs[src[7]])
}

// setW3C sets traceparent to tp and tracestate to state, or removes a
// tracestate when state is empty.
func setW3C(h tracing.HeaderSetter, tp, state string) {
	if sd, ok := h.(tracing.HeaderSetDeleter); ok {
		setW3CDel(sd, tp, state)
		return
	}
	h.Set(traceparent, tp)
	if state != "" {
		h.Set(tracestate, state)
		return
	}
	h.Del(tracestate)
}

// setW3CDel is setW3C for headers that set one field and delete another
// in one pass over their fields (the connection manager's).
func setW3CDel(h tracing.HeaderSetDeleter, tp, state string) {
	if state != "" {
		h.Set(traceparent, tp)
		h.Set(tracestate, state)
		return
	}
	h.SetDel(traceparent, tp, tracestate)
}
