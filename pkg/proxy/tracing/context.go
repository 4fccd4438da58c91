package tracing

import (
	"encoding/binary"
	"math/rand/v2"
)

// SpanContext is the context of a request's span that is not sampled,
// which a connection manager keeps in its stream instead of a Span: the
// ids the request propagates, and nothing else. Most requests are not
// sampled, and such a span is never reported, named or tagged: Envoy's
// tracers still give it fresh ids and propagate them, marked not sampled,
// which is all this keeps. A stream reuses its SpanContext from one
// request to the next.
type SpanContext struct {
	Trace  TraceID
	ID     SpanID
	Parent SpanID
	// TraceState is W3C's tracestate as received. It views the request's
	// headers: it lives as long as the request.
	TraceState string
	// Valid is false when the request has no span (a context in its
	// headers that the driver cannot read: Envoy's null span).
	Valid bool
	// Scratch is the propagator's: the header values it writes stay
	// valid until the context is started again.
	Scratch []byte

	rng    wyrand
	seeded bool
}

// StartRoot starts a root span's context: a new 128-bit trace id and a
// new span id.
func (c *SpanContext) StartRoot() {
	c.seed()
	hi, lo := c.rng.next(), c.rng.next()
	for hi|lo == 0 {
		hi, lo = c.rng.next(), c.rng.next()
	}
	binary.BigEndian.PutUint64(c.Trace[:8], hi)
	binary.BigEndian.PutUint64(c.Trace[8:], lo)
	c.Parent, c.TraceState, c.Valid = SpanID{}, "", true
	c.newID()
}

// StartChild starts the context of a child of the span parent of trace:
// a new span id.
func (c *SpanContext) StartChild(trace TraceID, parent SpanID, state string) {
	c.seed()
	c.Trace, c.Parent, c.TraceState, c.Valid = trace, parent, state, true
	c.newID()
}

// Invalidate records that the request has no span.
func (c *SpanContext) Invalidate() { c.Valid = false }

// newID draws the span's id.
func (c *SpanContext) newID() {
	x := c.rng.next()
	for x == 0 {
		x = c.rng.next()
	}
	binary.BigEndian.PutUint64(c.ID[:], x)
}

// seed seeds the generator the first time the context is started.
func (c *SpanContext) seed() {
	if !c.seeded {
		c.rng, c.seeded = wyrand(rand.Uint64()), true
	}
}

// ContextDriver is a Driver that starts a span that is not sampled as a
// bare SpanContext: no span object, no pool, no tags, for what is most
// requests. The connection manager uses it when nothing asks for the
// unsampled span itself (no child spans); a span needed later after all
// is made from the context (ContextSpan).
type ContextDriver interface {
	Driver
	// StartContext starts the span of a request as StartSpan would, when
	// that span is not sampled: it fills c and returns true (c.Valid false
	// where StartSpan returns nil). It returns false, c untouched, when
	// the span would be sampled or the driver needs a span to decide: the
	// caller then calls StartSpan.
	StartContext(h Headers, traced bool, c *SpanContext) bool
	// InjectContext writes c into the upstream request's headers, marked
	// not sampled, as the span's Inject would.
	InjectContext(c *SpanContext, h HeaderSetDeleter)
	// ContextSpan returns the span c is the context of, started with o's
	// name, kind and time (in o.Local when set), for a caller that needs
	// the span after all: a mirrored request's child span.
	ContextSpan(c *SpanContext, o StartOptions) *Span
}

// TraceparentDriver is a ContextDriver that propagates in W3C's
// traceparent and tracestate. When a request has neither field, and the
// context has no tracestate to pass on, InjectContext only adds a
// traceparent: a caller that knows the request has neither (the
// connection manager's pass over its fields) adds it itself, without
// InjectContext's calls and search for fields to replace or remove.
type TraceparentDriver interface {
	ContextDriver
	// Traceparent returns the traceparent InjectContext writes for c, and
	// true when that field is all it writes (c has no tracestate); false
	// otherwise, when InjectContext must run. The value views c.Scratch:
	// it is valid until c is injected again.
	Traceparent(c *SpanContext) (string, bool)
	// SpanTraceparent is Traceparent for a span the driver started: the
	// traceparent its Inject writes, with its sampling flag, and true when
	// that field is all it writes (the span has no tracestate). The value
	// views s.Scratch: it is valid until s is injected again.
	SpanTraceparent(s *Span) (string, bool)
}
