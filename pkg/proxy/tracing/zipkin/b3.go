package zipkin

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// The B3 headers.
const (
	b3Single       = "b3"
	b3TraceID      = "x-b3-traceid"
	b3SpanID       = "x-b3-spanid"
	b3ParentSpanID = "x-b3-parentspanid"
	b3Sampled      = "x-b3-sampled"
	b3Flags        = "x-b3-flags"
)

// b3Context is a B3 trace context.
type b3Context struct {
	trace   tracing.TraceID
	span    tracing.SpanID
	parent  tracing.SpanID
	sampled bool
}

// extractSampled is the sampling of a request: what b3 or x-b3-sampled
// (or the debug flag of x-b3-flags) says, else the connection manager's
// decision, as Envoy's Zipkin SpanContextExtractor decides.
func extractSampled(h tracing.Headers, decision bool) bool {
	if v, ok := h.Get(b3Single); ok {
		var c byte
		switch len(v) {
		case 1:
			c = v[0]
		case 35, 52: // 64-bit trace id, with or without a parent
			c = v[34]
		case 51, 68: // 128-bit trace id, with or without a parent
			c = v[50]
		default:
			return decision
		}
		switch c {
		case '1', 'd':
			return true
		case '0':
			return false
		}
		return decision
	}
	if v, ok := h.Get(b3Sampled); ok {
		return v == "1" || v == "true"
	}
	if v, ok := h.Get(b3Flags); ok && v == "1" {
		// Debug implies sampled (the B3 specification).
		return true
	}
	return decision
}

// errNoContext: the request carries no B3 context.
var errNoContext = errors.New("no b3 context")

// extractContext reads the B3 context, single-header form first; an
// unparsable one is an error (the request is then not traced).
func extractContext(h tracing.Headers, sampled bool) (b3Context, error) {
	c := b3Context{sampled: sampled}
	if v, ok := h.Get(b3Single); ok {
		parts := strings.Split(v, "-")
		if len(parts) == 1 {
			// Only a sampling decision.
			return c, errNoContext
		}
		if len(parts) > 4 || len(parts) == 3 && len(parts[2]) != 1 {
			return c, errors.New("invalid b3 header")
		}
		var err error
		if c.trace, err = parseTraceID(parts[0]); err != nil {
			return c, err
		}
		if c.span, err = parseSpanID(parts[1]); err != nil {
			return c, err
		}
		if len(parts) == 4 {
			if c.parent, err = parseSpanID(parts[3]); err != nil {
				return c, err
			}
		}
		return c, nil
	}
	tid, okT := h.Get(b3TraceID)
	sid, okS := h.Get(b3SpanID)
	if !okT || !okS {
		return c, errNoContext
	}
	var err error
	if c.trace, err = parseTraceID(tid); err != nil {
		return c, err
	}
	if c.span, err = parseSpanID(sid); err != nil {
		return c, err
	}
	if pid, ok := h.Get(b3ParentSpanID); ok && pid != "" {
		if c.parent, err = parseSpanID(pid); err != nil {
			return c, err
		}
	}
	return c, nil
}

// parseTraceID reads a 16 or 32 digit hexadecimal trace id.
func parseTraceID(s string) (tracing.TraceID, error) {
	var t tracing.TraceID
	switch len(s) {
	case 32:
		if _, err := hex.Decode(t[:], []byte(s)); err != nil {
			return t, errors.New("invalid trace id " + s)
		}
	case 16:
		if _, err := hex.Decode(t[8:], []byte(s)); err != nil {
			return t, errors.New("invalid trace id " + s)
		}
	default:
		n, err := parseHex64(s)
		if err != nil {
			return t, errors.New("invalid trace id " + s)
		}
		binary.BigEndian.PutUint64(t[8:], n)
	}
	return t, nil
}

// parseSpanID reads a hexadecimal span id of up to 16 digits.
func parseSpanID(s string) (tracing.SpanID, error) {
	var id tracing.SpanID
	n, err := parseHex64(s)
	if err != nil {
		return id, errors.New("invalid span id " + s)
	}
	binary.BigEndian.PutUint64(id[:], n)
	return id, nil
}

// parseHex64 reads 1 to 16 hexadecimal digits.
func parseHex64(s string) (uint64, error) {
	if s == "" || len(s) > 16 {
		return 0, errors.New("not a 64-bit hexadecimal number")
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, errors.New("not a 64-bit hexadecimal number")
		}
		n = n<<4 | uint64(d)
	}
	return n, nil
}

// traceIDHex is a trace id as Zipkin writes it: 32 digits when 128-bit,
// else 16.
func traceIDHex(t tracing.TraceID) string {
	if binary.BigEndian.Uint64(t[:8]) == 0 {
		return hex.EncodeToString(t[8:])
	}
	return hex.EncodeToString(t[:])
}

// b3 propagates spans in the multi-header B3 form.
type b3 struct{}

// Inject implements tracing.Propagator: the span is the upstream's parent;
// a b3 single header the client sent, which would contradict these, is
// removed.
func (b3) Inject(s *tracing.Span, h tracing.HeaderSetter) {
	// The values live in the span's scratch buffer, sized once for the
	// three ids, so that their views stay put.
	b := s.Scratch[:0]
	if cap(b) < 64 {
		b = make([]byte, 0, 64)
	}
	if binary.BigEndian.Uint64(s.Trace[:8]) == 0 {
		b = tracing.AppendHex64(b, binary.BigEndian.Uint64(s.Trace[8:]))
	} else {
		b = s.Trace.AppendHex(b)
	}
	traceHex := b[:len(b):len(b)]
	b = s.ID.AppendHex(b)
	spanHex := b[len(traceHex):]
	b = s.Parent.AppendHex(b)
	parentHex := b[len(traceHex)+len(spanHex):]
	s.Scratch = b
	h.Set(b3TraceID, unsafeString(traceHex))
	h.Set(b3SpanID, unsafeString(spanHex))
	if !s.Parent.IsZero() {
		h.Set(b3ParentSpanID, unsafeString(parentHex))
	} else {
		h.Del(b3ParentSpanID)
	}
	if s.Sampled {
		h.Set(b3Sampled, "1")
	} else {
		h.Set(b3Sampled, "0")
	}
	h.Del(b3Single)
}
