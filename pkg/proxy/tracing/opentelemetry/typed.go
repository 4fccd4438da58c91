package opentelemetry

import (
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// The AnyValue fields of typed attributes (CustomTag.value_type).
const (
	fieldBoolValue   = 2 // AnyValue.bool_value
	fieldIntValue    = 3 // AnyValue.int_value
	fieldDoubleValue = 4 // AnyValue.double_value
)

// typedValue is a tag's value coerced to its value type: the AnyValue
// field and its wire value; ok is false when the value does not parse
// (the tag is then exported as its string, as Envoy does).
func typedValue(v string, t tracing.ValueType) (field protowire.Number, bits uint64, ok bool) {
	switch t {
	case tracing.IntValue:
		// absl's SimpleAtoi: surrounding spaces, an optional sign.
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		return fieldIntValue, uint64(n), true
	case tracing.DoubleValue:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, 0, false
		}
		return fieldDoubleValue, math.Float64bits(f), true
	case tracing.BoolValue:
		// absl's SimpleAtob spellings, in any case.
		switch strings.ToLower(v) {
		case "true", "t", "yes", "y", "1":
			return fieldBoolValue, 1, true
		case "false", "f", "no", "n", "0":
			return fieldBoolValue, 0, true
		}
	}
	return 0, 0, false
}

// typedAnySize is the size of an AnyValue holding a typed value.
func typedAnySize(field protowire.Number, bits uint64) int {
	if field == fieldDoubleValue {
		return 1 + 8
	}
	return 1 + protowire.SizeVarint(bits)
}

// typedTagsSize is the size of a span's attributes when some are typed
// (tracing.Span.Typed): each tag's KeyValue, typed or string.
func typedTagsSize(s *tracing.Span) int {
	n := 0
	for _, t := range s.Tags {
		n += lenField(typedKVSize(s, t))
	}
	return n
}

// typedKVSize is the size of a tag's KeyValue, typed when its type says
// so and its value parses.
func typedKVSize(s *tracing.Span, t tracing.Tag) int {
	if field, bits, ok := typedValue(t.Value, s.TypeOf(t.Key)); ok {
		n := lenField(typedAnySize(field, bits))
		if t.Key != "" {
			n += lenField(len(t.Key))
		}
		return n
	}
	return kvSize(t.Key, t.Value)
}

// appendTypedTags appends a span's attributes when some are typed: every
// tag encoded, the prepared runs as well (their bytes are what appendKV
// writes for them).
func appendTypedTags(b []byte, s *tracing.Span) []byte {
	for _, t := range s.Tags {
		field, bits, ok := typedValue(t.Value, s.TypeOf(t.Key))
		if !ok {
			b = appendKV(b, fieldSpanAttrs, t.Key, t.Value)
			continue
		}
		b = protowire.AppendTag(b, fieldSpanAttrs, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(typedKVSize(s, t)))
		if t.Key != "" {
			b = protowire.AppendTag(b, fieldKey, protowire.BytesType)
			b = protowire.AppendString(b, t.Key)
		}
		b = protowire.AppendTag(b, fieldValue, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(typedAnySize(field, bits)))
		if field == fieldDoubleValue {
			b = protowire.AppendTag(b, field, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, bits)
			continue
		}
		b = protowire.AppendTag(b, field, protowire.VarintType)
		b = protowire.AppendVarint(b, bits)
	}
	return b
}
