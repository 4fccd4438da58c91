package opentelemetry

import (
	"encoding/binary"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// The OTLP export request is written straight from the spans with
// protowire, the fields numbered as in opentelemetry/proto (collector
// ExportTraceServiceRequest, trace ResourceSpans, ScopeSpans and Span,
// common KeyValue and AnyValue, resource Resource): building the generated
// messages would cost several allocations per attribute.
const (
	fieldResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fieldResource   = 1 // ResourceSpans.resource
	fieldScopeSpans = 2 // ResourceSpans.scope_spans

	fieldAttributes = 1 // Resource.attributes

	fieldScope = 1 // ScopeSpans.scope
	fieldSpans = 2 // ScopeSpans.spans

	fieldScopeName    = 1 // InstrumentationScope.name
	fieldScopeVersion = 2 // InstrumentationScope.version

	fieldTraceID      = 1 // Span.trace_id
	fieldSpanID       = 2 // Span.span_id
	fieldTraceState   = 3 // Span.trace_state
	fieldParentSpanID = 4 // Span.parent_span_id
	fieldName         = 5 // Span.name
	fieldKind         = 6 // Span.kind
	fieldStart        = 7 // Span.start_time_unix_nano
	fieldEnd          = 8 // Span.end_time_unix_nano
	fieldSpanAttrs    = 9 // Span.attributes

	fieldKey         = 1 // KeyValue.key
	fieldValue       = 2 // KeyValue.value
	fieldStringValue = 1 // AnyValue.string_value
)

// The SpanKind values.
const (
	kindServer = 2
	kindClient = 3
)

// lenField is the size of a length-delimited field of n bytes with a
// one-byte tag (field numbers below 16).
func lenField(n int) int { return 1 + protowire.SizeBytes(n) }

// anySize is the size of an AnyValue holding a string.
func anySize(v string) int { return lenField(len(v)) }

// kvSize is the size of a KeyValue with a string value.
func kvSize(k, v string) int {
	if k != "" && len(k)+len(v) < maxShortKV {
		return 6 + len(k) + len(v)
	}
	n := lenField(anySize(v))
	if k != "" {
		n += lenField(len(k))
	}
	return n
}

// maxShortKV bounds the key and value lengths of a short KeyValue: one
// whose size, 6 bytes more (two tags and lengths in it, two in its
// AnyValue), is below 128, so that each length takes one byte. The tags
// of a span are short, all but long URLs and custom values.
const maxShortKV = 128 - 6

// appendKV appends a KeyValue with a string value as field num.
func appendKV(b []byte, num protowire.Number, k, v string) []byte {
	if k != "" && len(k)+len(v) < maxShortKV {
		// The common case in one pass, each tag and length a byte.
		b = append(b, byte(num)<<3|byte(protowire.BytesType), byte(6+len(k)+len(v)),
			fieldKey<<3|byte(protowire.BytesType), byte(len(k)))
		b = append(b, k...)
		b = append(b, fieldValue<<3|byte(protowire.BytesType), byte(2+len(v)),
			fieldStringValue<<3|byte(protowire.BytesType), byte(len(v)))
		return append(b, v...)
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(kvSize(k, v)))
	if k != "" {
		b = protowire.AppendTag(b, fieldKey, protowire.BytesType)
		b = protowire.AppendString(b, k)
	}
	b = protowire.AppendTag(b, fieldValue, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(anySize(v)))
	b = protowire.AppendTag(b, fieldStringValue, protowire.BytesType)
	return protowire.AppendString(b, v)
}

// spanSize is the size of a Span message.
func spanSize(s *tracing.Span) int {
	n := lenField(len(s.Trace)) + lenField(len(s.ID)) + 1 + protowire.SizeVarint(kindOf(s)) + 2*(1+8)
	if s.TraceState != "" {
		n += lenField(len(s.TraceState))
	}
	if !s.Parent.IsZero() {
		n += lenField(len(s.Parent))
	}
	if s.Name != "" {
		n += lenField(len(s.Name))
	}
	if len(s.Typed) > 0 {
		return n + typedTagsSize(s)
	}
	if sum, longest := s.TagBytes(); longest < maxShortKV {
		// Every tag short (the usual case): a short KeyValue (kvSize) and
		// its one-byte tag and length each, from the span's running sum.
		return n + 8*len(s.Tags) + sum
	}
	for _, t := range s.Tags {
		if kv := len(t.Key) + len(t.Value); kv < maxShortKV && t.Key != "" {
			// A short KeyValue (kvSize) and its one-byte tag and length.
			n += 8 + kv
			continue
		}
		n += lenField(kvSize(t.Key, t.Value))
	}
	return n
}

// kindOf is a span's SpanKind.
func kindOf(s *tracing.Span) uint64 {
	if s.Kind == tracing.Client {
		return kindClient
	}
	return kindServer
}

// appendSpan appends a Span of size bytes (its spanSize) as field num.
// The fixed fields are written as bytes rather than through protowire's
// calls, one per tag, length and value: every sampled request has a span.
func appendSpan(b []byte, s *tracing.Span, size int) []byte {
	// The tag and the size's varint in one append, for the sizes of two
	// bytes (most spans: protowire's call cost more than the append).
	if size >= 1<<7 && size < 1<<14 {
		b = append(b, fieldSpans<<3|byte(protowire.BytesType), byte(size)|0x80, byte(size>>7))
	} else {
		b = append(b, fieldSpans<<3|byte(protowire.BytesType))
		b = protowire.AppendVarint(b, uint64(size))
	}
	b = append(b, fieldTraceID<<3|byte(protowire.BytesType), byte(len(s.Trace)))
	b = append(b, s.Trace[:]...)
	b = append(b, fieldSpanID<<3|byte(protowire.BytesType), byte(len(s.ID)))
	b = append(b, s.ID[:]...)
	if s.TraceState != "" {
		b = protowire.AppendTag(b, fieldTraceState, protowire.BytesType)
		b = protowire.AppendString(b, s.TraceState)
	}
	if !s.Parent.IsZero() {
		b = append(b, fieldParentSpanID<<3|byte(protowire.BytesType), byte(len(s.Parent)))
		b = append(b, s.Parent[:]...)
	}
	if s.Name != "" {
		// A name below 128 bytes (most): its length a byte, as above.
		if len(s.Name) < 1<<7 {
			b = append(b, fieldName<<3|byte(protowire.BytesType), byte(len(s.Name)))
			b = append(b, s.Name...)
		} else {
			b = append(b, fieldName<<3|byte(protowire.BytesType))
			b = protowire.AppendString(b, s.Name)
		}
	}
	// The kind is 2 or 3: a one-byte varint.
	b = append(b, fieldKind<<3|byte(protowire.VarintType), byte(kindOf(s)), fieldStart<<3|byte(protowire.Fixed64Type))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.Start.UnixNano()))
	b = append(b, fieldEnd<<3|byte(protowire.Fixed64Type))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.End.UnixNano()))
	if len(s.Typed) > 0 {
		return appendTypedTags(b, s)
	}
	// The tags, but for the runs encoded once (tracing.PreparedTags),
	// which are copied. The loops stay the plain loop over the tags:
	// keeping the runs' state in it cost more than the runs saved.
	tags, done := s.Tags, 0
	for _, r := range s.Encoded {
		b = appendTags(b, tags[done:r.At])
		b = append(b, r.Enc...)
		done = r.At + r.N
	}
	return appendTags(b, tags[done:])
}

// appendTags appends tags as span attributes.
func appendTags(b []byte, tags []tracing.Tag) []byte {
	for i := range tags {
		// By pointer: a copy of each tag, kept across the calls, cost
		// more than the loads.
		t := &tags[i]
		// A known key's string (tracing.Key), told by its address and
		// its length, the fourth byte of its table's slot.
		if k, ok := tracing.KnownKeyAt(t.Key); ok && len(t.Value) < maxShortKnownValue {
			if kv := &knownKVs[k]; byte(kv[0]>>24) == byte(len(t.Key)) {
				// appendKV's bytes, the key's tags, lengths and
				// bytes stored as the slot's four words rather than
				// appended in three steps (a copy of the slot as an
				// array was a call to memmove), written out here (as
				// a function, its call cost a fifth of it). The bytes
				// of the slot past the key's encoding are overwritten
				// by the value or left past the end; kl is at most
				// tracing.MaxKnownKeyLen, the masks only spare bounds
				// checks.
				n, kl, v := len(b), len(t.Key), t.Value
				if cap(b)-n < tracing.KnownKeySlot+len(v) {
					b = slices.Grow(b, tracing.KnownKeySlot+len(v))
				}
				d := (*[tracing.KnownKeySlot]byte)(b[n : n+tracing.KnownKeySlot])
				binary.LittleEndian.PutUint64(d[0:], kv[0]|uint64(6+kl+len(v))<<8)
				binary.LittleEndian.PutUint64(d[8:], kv[1])
				binary.LittleEndian.PutUint64(d[16:], kv[2])
				binary.LittleEndian.PutUint64(d[24:], kv[3])
				d[(kl+5)&(tracing.KnownKeySlot-1)] = byte(2 + len(v))
				d[(kl+7)&(tracing.KnownKeySlot-1)] = byte(len(v))
				b = append(b[:n+kl+8], v...)
				continue
			}
		}
		b = appendKV(b, fieldSpanAttrs, t.Key, t.Value)
	}
	return b
}

// maxShortKnownValue bounds the values a known key's KeyValue is written
// for from its table (appendTags): with any known key, the KeyValue is
// then short (appendKV's common case), each of its lengths a byte.
const maxShortKnownValue = maxShortKV - tracing.MaxKnownKeyLen

// knownKVs are the span attributes of the known keys
// (tracing.KnownKey) as appendKV writes them, up to the value, with the
// three lengths that depend on the value left zero: the KeyValue's, the
// AnyValue's and the string's; each in the four words of a slot. Made
// once, never written.
var knownKVs = func() (kvs [tracing.NumKnownKeys][tracing.KnownKeySlot / 8]uint64) {
	for k := range kvs {
		name := tracing.KnownKeyName(tracing.KnownKey(k))
		var slot [tracing.KnownKeySlot]byte
		b := append(slot[:0], fieldSpanAttrs<<3|byte(protowire.BytesType), 0,
			fieldKey<<3|byte(protowire.BytesType), byte(len(name)))
		b = append(b, name...)
		_ = append(b, fieldValue<<3|byte(protowire.BytesType), 0,
			fieldStringValue<<3|byte(protowire.BytesType), 0)
		for i := range kvs[k] {
			kvs[k][i] = binary.LittleEndian.Uint64(slot[8*i:])
		}
	}
	return kvs
}()

// encodeTag is a span attribute's KeyValue as appendSpan writes it
// (tracing.TagEncoder).
func encodeTag(key, value string) string {
	return string(appendKV(nil, fieldSpanAttrs, key, value))
}

// requestHead is what every export request repeats before its spans:
// the resource's attributes and the ScopeSpans' InstrumentationScope
// field, encoded once (empty when set_instrumentation_scope is false).
type requestHead struct {
	resource []tracing.Tag
	scope    []byte
}

// newRequestHead encodes the instrumentation scope Envoy names its spans
// with (name and version) when scope is true.
func newRequestHead(resource []tracing.Tag, scope bool, name, version string) requestHead {
	h := requestHead{resource: resource}
	if scope {
		var in []byte
		in = protowire.AppendTag(in, fieldScopeName, protowire.BytesType)
		in = protowire.AppendString(in, name)
		if version != "" {
			in = protowire.AppendTag(in, fieldScopeVersion, protowire.BytesType)
			in = protowire.AppendString(in, version)
		}
		h.scope = protowire.AppendTag(h.scope, fieldScope, protowire.BytesType)
		h.scope = protowire.AppendBytes(h.scope, in)
	}
	return h
}

// appendScopeSpans appends an ExportTraceServiceRequest's head, up to
// and with its ScopeSpans' tag, length and scope, for the head's resource
// and spans of spansSize bytes.
func appendScopeSpans(b []byte, h requestHead, spansSize int) []byte {
	resSize := 0
	for _, t := range h.resource {
		resSize += lenField(kvSize(t.Key, t.Value))
	}
	scopeSize := len(h.scope) + spansSize
	rsSize := lenField(resSize) + lenField(scopeSize)
	b = slices.Grow(b, lenField(rsSize))
	b = protowire.AppendTag(b, fieldResourceSpans, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(rsSize))
	b = protowire.AppendTag(b, fieldResource, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(resSize))
	for _, t := range h.resource {
		b = appendKV(b, fieldAttributes, t.Key, t.Value)
	}
	b = protowire.AppendTag(b, fieldScopeSpans, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(scopeSize))
	return append(b, h.scope...)
}

// appendEncodedRequest appends the ExportTraceServiceRequest of spans
// already encoded as appendSpan writes them (encodeSpan), joined in enc:
// the same bytes as appendRequest writes for the spans.
func appendEncodedRequest(b []byte, h requestHead, enc []byte) []byte {
	b = appendScopeSpans(b, h, len(enc))
	return append(b, enc...)
}

// encodeSpan appends a span as appendRequest writes it
// (tracing.SpanEncoder), when it finishes.
func encodeSpan(b []byte, s *tracing.Span) []byte {
	return appendSpan(b, s, spanSize(s))
}

// encoder writes export requests. Each span's size is computed once, in
// sizes, reused from one request to the next, and the buffer grows once to
// the request's size: a batch costs no allocation when b has room.
type encoder struct {
	sizes []int
}

// appendRequest appends the ExportTraceServiceRequest of a batch: one
// ResourceSpans with the head's resource and one ScopeSpans.
func (e *encoder) appendRequest(b []byte, h requestHead, spans []*tracing.Span) []byte {
	e.sizes = e.sizes[:0]
	spansSize := 0
	for _, s := range spans {
		n := spanSize(s)
		e.sizes = append(e.sizes, n)
		spansSize += lenField(n)
	}
	b = appendScopeSpans(b, h, spansSize)
	for i, s := range spans {
		b = appendSpan(b, s, e.sizes[i])
	}
	return b
}
