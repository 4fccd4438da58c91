package httpfilter

import "github.com/outrigger-dev/outrigger/pkg/proxy/tracing"

// SpanSource is implemented by a Stream whose request may be traced: a
// filter that calls a service for the request (ext_authz, ext_proc) starts
// the call's span as a child of the request's, as Envoy's filters pass
// their callbacks' activeSpan() to the asynchronous client.
type SpanSource interface {
	// ActiveSpan returns the request's span, sampled or not, or nil when
	// the request has none (no tracing, or a trace context the tracer
	// could not read). It is called on the stream's goroutine; the span
	// stays valid until the filters are destroyed, and a caller reads only
	// its context (Child, Inject) and never finishes it.
	ActiveSpan() *tracing.Span
}

// ActiveSpan is s's request span when the stream offers one (SpanSource),
// else nil.
func ActiveSpan(s Stream) *tracing.Span {
	if src, ok := s.(SpanSource); ok {
		return src.ActiveSpan()
	}
	return nil
}
