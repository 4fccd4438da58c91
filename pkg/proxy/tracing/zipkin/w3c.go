package zipkin

import (
	"errors"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// traceparent is the W3C Trace Context header that trace_context_option
// USE_B3_WITH_W3C_PROPAGATION reads and writes beside B3's.
const traceparent = "traceparent"

// hasB3 reports whether the request carries any B3 header: only a request
// with none falls back to its traceparent.
func hasB3(h tracing.Headers) bool {
	for _, name := range [...]string{b3Single, b3TraceID, b3SpanID, b3Sampled, b3Flags} {
		if _, ok := h.Get(name); ok {
			return true
		}
	}
	return false
}

// extractWithW3C is the B3 extraction of USE_B3_WITH_W3C_PROPAGATION, as
// Envoy's Zipkin extractor with its W3C fallback: B3 first; a request
// with no B3 context (and no B3 sampling decision for the sampling) is
// read from a valid traceparent, its trace id and span id the context's,
// its flag the sampling. An invalid traceparent is no context, and the
// request starts a trace of its own.
func extractWithW3C(h tracing.Headers, decision bool) (b3Context, bool, error) {
	if !hasB3(h) {
		if v, ok := h.Get(traceparent); ok {
			if p, err := tracing.ParseTraceparent(v); err == nil {
				return b3Context{trace: p.Trace, span: p.Span, sampled: p.Sampled}, p.Sampled, nil
			}
		}
		return b3Context{sampled: decision}, decision, errNoContext
	}
	sampled := extractSampled(h, decision)
	c, err := extractContext(h, sampled)
	if errors.Is(err, errNoContext) {
		// A b3 header with only a sampling decision: the W3C context,
		// if any, is the parent, with B3's decision.
		if v, ok := h.Get(traceparent); ok {
			if p, perr := tracing.ParseTraceparent(v); perr == nil {
				return b3Context{trace: p.Trace, span: p.Span, sampled: sampled}, sampled, nil
			}
		}
	}
	return c, sampled, err
}

// b3w3c propagates spans in the multi-header B3 form and in a W3C
// traceparent (USE_B3_WITH_W3C_PROPAGATION).
type b3w3c struct{}

// scratchW3C is the span's scratch size for the three B3 ids and the
// traceparent: sized once, so that the views the headers keep stay put.
const scratchW3C = 64 + tracing.TraceparentLen

// Inject implements tracing.Propagator: B3's headers, then a traceparent
// naming the same span, the trace id in its 32 digits (a 64-bit one
// padded with zeros), with the sampled flag.
func (b3w3c) Inject(s *tracing.Span, h tracing.HeaderSetter) {
	if cap(s.Scratch) < scratchW3C {
		s.Scratch = make([]byte, 0, scratchW3C)
	}
	b3{}.Inject(s, h)
	b := s.Scratch
	start := len(b)
	b = tracing.AppendTraceparent(b, &s.Trace, &s.ID, s.Sampled)
	s.Scratch = b
	h.Set(traceparent, unsafeString(b[start:]))
}
