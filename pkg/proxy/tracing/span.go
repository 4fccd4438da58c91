package tracing

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Kind is a span's role, as OpenTelemetry and Zipkin name them.
type Kind uint8

// The kinds Envoy's spans have.
const (
	// Server is the span of a request the proxy received (ingress).
	Server Kind = iota
	// Client is the span of a request the proxy sends: egress listeners'
	// spans and the router's upstream child spans.
	Client
)

// Tag is one span attribute; values are strings, as Envoy's.
type Tag struct {
	Key, Value string
}

// ValueType is the type a custom tag's value is exported as
// (CustomTag.value_type): tracers with typed attributes (OpenTelemetry)
// coerce the value, and fall back to the string when it does not parse;
// the others always export the string.
type ValueType uint8

// The value types.
const (
	StringValue ValueType = iota
	IntValue
	DoubleValue
	BoolValue
)

// TypedTag names a tag of the span whose value has a type other than
// the string.
type TypedTag struct {
	Key  string
	Type ValueType
}

// TagEncoder is a Driver whose export writes a tag the same bytes each
// time (OpenTelemetry's KeyValue): it encodes constant tags once
// (PrepareTags).
type TagEncoder interface {
	// EncodeTag returns the tag of key and value as the export writes it.
	EncodeTag(key, value string) string
}

// PreparedTags are tags whose keys and values are the same for many spans
// (configuration, constants), added together (AddPreparedTags) with their
// encoding made once: the export copies it in one piece rather than
// encoding the tags again.
type PreparedTags struct {
	tags []Tag
	// enc is the tags as the driver's export writes them, empty when it
	// cannot tell.
	enc string
	// sum and longest are the tags' TagBytes.
	sum, longest int
}

// PrepareTags prepares tags, whose keys and values must outlive the spans,
// for d's spans: encoded when d is a TagEncoder.
func PrepareTags(d Driver, tags ...Tag) *PreparedTags {
	p := &PreparedTags{tags: tags}
	e, ok := d.(TagEncoder)
	var enc strings.Builder
	for _, t := range tags {
		n := len(t.Key) + len(t.Value)
		if t.Key == "" {
			n, ok = math.MaxInt, false
		}
		p.sum += len(t.Key) + len(t.Value)
		p.longest = max(p.longest, n)
		if ok {
			enc.WriteString(e.EncodeTag(t.Key, t.Value))
		}
	}
	if ok {
		p.enc = enc.String()
	}
	return p
}

// Tags returns the prepared tags.
func (p *PreparedTags) Tags() []Tag { return p.tags }

// EncodedRun is a run of a span's tags (AddPreparedTags) already encoded
// for its driver's export: Tags[At:At+N] as Enc.
type EncodedRun struct {
	At, N int
	Enc   string
}

// Log is one timestamped event of a span (Envoy's span log), which the
// connection manager records with tracing.verbose. Zipkin reports logs as
// annotations; OpenTelemetry, as Envoy's tracer, drops them.
type Log struct {
	Time  time.Time
	Event string
}

// TraceID is a 128-bit trace id; a 64-bit one has a zero high half.
type TraceID [16]byte

// SpanID is a 64-bit span id.
type SpanID [8]byte

// IsZero reports whether the id is all zeros (invalid).
func (t TraceID) IsZero() bool { return t == TraceID{} }

// IsZero reports whether the id is all zeros (invalid, or no parent).
func (s SpanID) IsZero() bool { return s == SpanID{} }

// Hex is the id in lower-case hexadecimal, 32 digits.
func (t TraceID) Hex() string { return hex.EncodeToString(t[:]) }

// Hex is the id in lower-case hexadecimal, 16 digits.
func (s SpanID) Hex() string { return hex.EncodeToString(s[:]) }

// NewSpanID returns a random, non-zero span id.
func NewSpanID() SpanID {
	var s SpanID
	for s.IsZero() {
		binary.BigEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}

// NewTraceID returns a random, non-zero trace id: 128 bits, or 64 (the
// high half zero) when short.
func NewTraceID(short bool) TraceID {
	var t TraceID
	for t.IsZero() {
		if !short {
			binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		}
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t
}

// NewSpanID returns a random, non-zero span id from the span's own
// generator.
func (s *Span) NewSpanID() SpanID {
	var x uint64
	for x == 0 {
		x = s.rng.next()
	}
	var id SpanID
	binary.BigEndian.PutUint64(id[:], x)
	return id
}

// NewTraceID returns a random, non-zero trace id from the span's own
// generator: 128 bits, or 64 (the high half zero) when short.
func (s *Span) NewTraceID(short bool) TraceID {
	var hi, lo uint64
	for hi|lo == 0 {
		if !short {
			hi = s.rng.next()
		}
		lo = s.rng.next()
	}
	var t TraceID
	binary.BigEndian.PutUint64(t[:8], hi)
	binary.BigEndian.PutUint64(t[8:], lo)
	return t
}

// wyrand is the state of a wyrand generator (Wang Yi's): one 64-bit
// multiplication per draw, a third of what a PCG draw costs, and
// statistically sound for ids; its period is 2^64. A request's span
// draws three words, traced or not.
type wyrand uint64

// next returns the next random word.
func (w *wyrand) next() uint64 {
	*w += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(uint64(*w), uint64(*w)^0xe7037ed1a0b428db)
	return hi ^ lo
}

// Reporter takes finished, sampled spans (a Batcher).
type Reporter interface {
	Report(s *Span)
}

// SpanEncoder writes a finished span as its driver's export writes it
// (OTLP: the Span field of a ScopeSpans). A driver whose pool has one
// (SpanPool.EncodeAtFinish) has its spans encoded when they finish, on
// their request's goroutine, and reported as bytes: the export joins the
// bytes instead of encoding each span again, a span may borrow its
// strings until then (Borrow) instead of copying them, and it goes back to
// its pool, or its caller, at once.
type SpanEncoder interface {
	AppendSpan(b []byte, s *Span) []byte
}

// EncodedReporter takes finished, sampled spans encoded (a Batcher whose
// exporter is an EncodedExporter): it has e write s where it keeps the
// spans waiting for export, straight away, and keeps nothing of s.
type EncodedReporter interface {
	ReportEncoded(e SpanEncoder, s *Span)
}

// Propagator writes a span's context into request headers, in its
// provider's format.
type Propagator interface {
	Inject(s *Span, h HeaderSetter)
}

// Span is one span. A connection manager owns it until Finish, from one
// goroutine; then it belongs to the reporter, which releases it once
// exported. Its strings must not alias buffers that are reused: SetTag and
// SetOperation copy theirs into the span's own arena (unless the span
// borrows them until it finishes: Borrow), and tag keys must be immutable
// strings (constants, configuration).
type Span struct {
	Trace  TraceID
	ID     SpanID
	Parent SpanID
	Name   string
	Kind   Kind
	// Start and End are the span's times; End is set by Finish.
	Start, End time.Time
	// Sampled spans are reported; the others only propagate their
	// context, marked not sampled.
	Sampled bool
	// TraceState is W3C's tracestate, passed on as received.
	TraceState string
	// Shared is Zipkin's shared span context: the span has the id of the
	// client's span.
	Shared bool
	// Tags are the span's attributes. Providers read them; they change
	// only through the span's methods, which account for their sizes
	// (TagBytes).
	Tags []Tag
	// Logs are the span's events, in the order they were logged.
	Logs []Log
	// Encoded are the runs of Tags added prepared and encoded, in order;
	// a tag replaced by SetTag empties it (the export encodes every tag).
	Encoded []EncodedRun
	// Typed are the tags set with a value type (SetTypedTag), empty on
	// most spans.
	Typed []TypedTag

	reporter   Reporter
	propagator Propagator
	pool       *SpanPool
	// arena holds the bytes of the strings the span copied.
	arena []byte
	// Scratch is the propagator's: header values it builds stay valid
	// until the span is finished.
	Scratch []byte
	// rng draws the ids of the spans started with this one: seeded from
	// the runtime's generator once per pooled span, it costs a fraction
	// of a runtime draw, for the three random words of every request's
	// span, traced or not. Release keeps it.
	rng wyrand
	// local: the span belongs to its caller (SpanPool.Local), who keeps
	// it from one request to the next; it never goes into the pool.
	local bool
	// tagBytes is the sum of the tags' key and value lengths, tagMax the
	// longest key and value together (or more: it does not shrink when a
	// value is replaced), math.MaxInt after a tag with an empty key.
	tagBytes, tagMax int
	// borrow: the span's name and tag values are kept as given, not
	// copied (Borrow).
	borrow bool
}

// newSpan returns a span with its generator seeded.
func newSpan() *Span {
	s := &Span{}
	s.rng = wyrand(rand.Uint64())
	return s
}

// SpanPool recycles a driver's spans: their tag lists and buffers are
// reused, so that a request's span allocates nothing in the steady state.
type SpanPool struct {
	p sync.Pool
	// encoder and encoded, when set, encode and report the pool's
	// sampled spans as they finish (EncodeAtFinish).
	encoder SpanEncoder
	encoded EncodedReporter
}

// EncodeAtFinish has the pool's sampled spans encoded by e when they
// finish and reported to r as bytes, whatever reporter they were given.
// It is set once, before the pool's first span.
func (sp *SpanPool) EncodeAtFinish(e SpanEncoder, r EncodedReporter) {
	sp.encoder, sp.encoded = e, r
}

// EncodesAtFinish reports whether the pool's spans are encoded when they
// finish: a sampled span then need not be moved into the pool before it
// is reported (Pooled), as the reporter keeps only its bytes.
func (sp *SpanPool) EncodesAtFinish() bool { return sp.encoder != nil }

// Get returns a clean span that reports to r (when sampled) and
// propagates with p.
func (sp *SpanPool) Get(r Reporter, p Propagator) *Span {
	s, _ := sp.p.Get().(*Span)
	if s == nil {
		s = newSpan()
	}
	s.reporter, s.propagator, s.pool = r, p, sp
	return s
}

// NewSpan returns a span that reports to r (when sampled) and propagates
// with p, with no pool.
func NewSpan(r Reporter, p Propagator) *Span {
	s := newSpan()
	s.reporter, s.propagator = r, p
	return s
}

// Local readies s, a span its caller keeps from one request to the next
// (a connection manager's stream), to start a request's span in: most
// requests' spans are not sampled, and such a span then costs no trip
// through the pool. It reports to r and propagates with p; its children
// come from the pool. A span that turns out sampled is moved into a
// pooled one (Pooled) before it is reported, as the reporter keeps it
// past its request.
func (sp *SpanPool) Local(s *Span, r Reporter, p Propagator) *Span {
	if !s.local {
		s.rng = wyrand(rand.Uint64())
		s.local = true
	}
	if s.pool != nil {
		// Not finished last time (Finish and Release reset it).
		s.reset()
	}
	s.reporter, s.propagator, s.pool = r, p, sp
	return s
}

// Pooled returns s when it is not a local span; a local span's context,
// name, times and tags move into a span of its pool, which is returned,
// and s is released.
func (s *Span) Pooled() *Span {
	if !s.local || s.pool == nil {
		return s
	}
	p := s.pool.Get(s.reporter, s.propagator)
	p.Trace, p.ID, p.Parent, p.Kind = s.Trace, s.ID, s.Parent, s.Kind
	p.Start, p.End, p.Sampled, p.Shared = s.Start, s.End, s.Sampled, s.Shared
	p.Name, p.TraceState = p.own(s.Name), s.TraceState
	for _, t := range s.Tags {
		p.AddTag(t.Key, t.Value)
	}
	p.Typed = append(p.Typed, s.Typed...)
	p.Logs = append(p.Logs, s.Logs...)
	s.Release()
	return p
}

// Release gives a finished span back to its pool; the reporter calls it
// once the span is exported (or dropped). Nothing may use the span, or
// the strings it holds, afterwards. A local span stays with its caller.
func (s *Span) Release() {
	if s.pool == nil {
		return
	}
	pool := s.pool
	s.reset()
	if s.local {
		return
	}
	pool.p.Put(s)
}

// reset empties the span but for its generator and whether it is local.
// A local span's tags and encoded runs are not cleared, only cut: its
// next request's overwrite them. Clearing them (a typed clear, with the
// garbage collector's barrier) cost a sampled request about 150
// instructions; what the stale ones hold (the strings of a request, of
// configuration) stays alive until then, or until its caller (a stream)
// goes, bounded by the lists' capacities.
func (s *Span) reset() {
	if len(s.Tags) > 0 {
		if !s.local {
			clear(s.Tags)
		}
		s.Tags = s.Tags[:0]
	}
	if len(s.Logs) > 0 {
		clear(s.Logs)
		s.Logs = s.Logs[:0]
	}
	if len(s.Encoded) > 0 {
		if !s.local {
			clear(s.Encoded)
		}
		s.Encoded = s.Encoded[:0]
	}
	if len(s.Typed) > 0 {
		clear(s.Typed)
		s.Typed = s.Typed[:0]
	}
	// Field by field: assigning a whole Span literal built it aside and
	// copied it, pointers and all, which cost an untraced request more
	// than its random ids.
	s.Trace, s.ID, s.Parent = TraceID{}, SpanID{}, SpanID{}
	s.Name, s.TraceState = "", ""
	s.Kind, s.Sampled, s.Shared = Server, false, false
	s.Start, s.End = time.Time{}, time.Time{}
	s.arena, s.Scratch = s.arena[:0], s.Scratch[:0]
	s.tagBytes, s.tagMax, s.borrow = 0, 0, false
	s.reporter, s.propagator, s.pool = nil, nil, nil
}

// Borrow has the span keep the names and tag values it is given from now
// on as they are, without copying them, when it is encoded as it finishes
// (SpanPool.EncodeAtFinish): the caller keeps every such string valid and
// unchanged until Finish. Otherwise it does nothing.
func (s *Span) Borrow() {
	s.borrow = s.pool != nil && s.pool.encoder != nil
}

// own copies v into the span's arena, unless the span borrows its
// strings.
func (s *Span) own(v string) string {
	if v == "" || s.borrow {
		return v
	}
	start := len(s.arena)
	s.arena = append(s.arena, v...)
	return unsafe.String(&s.arena[start], len(v))
}

// SetOperation renames the span (a route's decorator, an
// x-envoy-decorator-operation header).
func (s *Span) SetOperation(name string) { s.Name = s.own(name) }

// SetTag sets an attribute, replacing an earlier value of the same key.
// The key must be immutable; the value is copied.
func (s *Span) SetTag(key, value string) {
	if key == "" {
		return
	}
	value = s.own(value)
	for i := range s.Tags {
		if s.Tags[i].Key == key {
			s.tagBytes += len(value) - len(s.Tags[i].Value)
			s.tagMax = max(s.tagMax, len(key)+len(value))
			s.Tags[i].Value = value
			if len(s.Encoded) > 0 {
				// The tag may be in an encoded run: rare (a custom
				// tag of a fixed tag's name), every tag is encoded.
				clear(s.Encoded)
				s.Encoded = s.Encoded[:0]
			}
			return
		}
	}
	s.AddConstTag(key, value)
}

// SetTypedTag is SetTag for a custom tag with a value type: the value
// stays the string, and the span notes the type its export coerces it
// to (the last one set for the key).
func (s *Span) SetTypedTag(key, value string, t ValueType) {
	s.SetTag(key, value)
	if key == "" {
		return
	}
	for i := range s.Typed {
		if s.Typed[i].Key == key {
			s.Typed[i].Type = t
			return
		}
	}
	if t != StringValue {
		s.Typed = append(s.Typed, TypedTag{Key: key, Type: t})
	}
}

// TypeOf returns the value type of a tag: StringValue unless set with
// another by SetTypedTag.
func (s *Span) TypeOf(key string) ValueType {
	for _, t := range s.Typed {
		if t.Key == key {
			return t.Type
		}
	}
	return StringValue
}

// AddTag sets an attribute that the span does not have yet (the caller
// knows, as for the fixed tags of a finished request), with no search for
// an earlier value: a request's span has about twenty tags, and the
// search cost it more than the tags themselves. The key must be
// immutable; the value is copied.
func (s *Span) AddTag(key, value string) {
	s.AddConstTag(key, s.own(value))
}

// AddConstTag is AddTag for a value that outlives the span (a constant, a
// configured name), which is not copied.
func (s *Span) AddConstTag(key, value string) {
	s.Tags = append(s.Tags, Tag{Key: key, Value: value})
	n := len(key) + len(value)
	s.tagBytes += n
	if key == "" {
		n = math.MaxInt
	}
	s.tagMax = max(s.tagMax, n)
}

// AddPreparedTags adds p's tags, which the span does not have yet, with
// their encoding when p has one.
func (s *Span) AddPreparedTags(p *PreparedTags) {
	if p.enc != "" {
		s.Encoded = append(s.Encoded, EncodedRun{At: len(s.Tags), N: len(p.tags), Enc: p.enc})
	}
	// Tag by tag: appending the slice copied it through the runtime's
	// typed copy, which cost more than the two or three stores.
	//lint:ignore S1011 the loop is the cheaper copy here (above).
	for _, t := range p.tags {
		s.Tags = append(s.Tags, t)
	}
	s.tagBytes += p.sum
	s.tagMax = max(s.tagMax, p.longest)
}

// TagBytes returns the sum of the tags' key and value lengths, and a
// bound on the longest tag's (math.MaxInt when a key is empty): an
// encoder sizes a span's tags from them in one step when none is long.
func (s *Span) TagBytes() (sum, longest int) { return s.tagBytes, s.tagMax }

// Log records an event at t. The event must be immutable (a constant).
func (s *Span) Log(t time.Time, event string) {
	s.Logs = append(s.Logs, Log{Time: t, Event: event})
}

// Tag returns an attribute's value.
func (s *Span) Tag(key string) (string, bool) {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value, true
		}
	}
	return "", false
}

// Inject writes the span's context into h, so that the upstream's spans
// are its children.
func (s *Span) Inject(h HeaderSetter) {
	if s.propagator != nil {
		s.propagator.Inject(s, h)
	}
}

// Child starts a child span of s (the router's upstream span): same trace,
// same sampling, s as parent, a new id, kind Client.
func (s *Span) Child(name string, start time.Time) *Span {
	var c *Span
	if s.pool != nil {
		c = s.pool.Get(s.reporter, s.propagator)
	} else {
		c = NewSpan(s.reporter, s.propagator)
	}
	c.Trace, c.ID, c.Parent = s.Trace, c.NewSpanID(), s.ID
	c.Name = c.own(name)
	c.Kind, c.Start, c.Sampled = Client, start, s.Sampled
	c.TraceState = s.TraceState
	return c
}

// Finish ends the span at end and reports it when it is sampled, or
// releases it. The span must not be used afterwards.
func (s *Span) Finish(end time.Time) {
	s.End = end
	if s.Sampled && s.reporter != nil {
		if pool := s.pool; pool != nil && pool.encoder != nil {
			// Encoded now, while the strings it borrows are valid;
			// only the bytes are kept.
			pool.encoded.ReportEncoded(pool.encoder, s)
			s.Release()
			return
		}
		// The reporter keeps the span: a local one is moved into the
		// pool first (a driver does it when the span starts, before it
		// has tags to copy).
		p := s.Pooled()
		p.reporter.Report(p)
		return
	}
	s.Release()
}
