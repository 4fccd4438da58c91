package accesslog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// jsonFormat is a compiled format dictionary: one JSON object per line.
type jsonFormat struct {
	root jsonValue
	// typed renders a value made of a single operator as its natural JSON
	// type (numbers, null when missing); otherwise every value is a string
	// and missing values are "-", as Envoy's legacy json_format does.
	typed bool
	// omitEmpty leaves out keys whose value is missing.
	omitEmpty bool
}

// jsonKind says what a jsonValue holds.
type jsonKind uint8

const (
	jsonRaw       jsonKind = iota // raw: pre-encoded JSON (number, bool, null)
	jsonObject                    // fields, sorted by key
	jsonList                      // items
	jsonFormatted                 // parts: a format string rendered as a string
)

// jsonValue is one compiled value of the dictionary.
type jsonValue struct {
	kind   jsonKind
	raw    string
	fields []jsonField
	items  []jsonValue
	parts  []part
	// numeric marks a single numeric operator (typed output as a number).
	numeric bool
}

// jsonField is one key and its value; key is pre-encoded with its quotes
// and colon.
type jsonField struct {
	key   string
	value jsonValue
}

// compileJSON compiles a format dictionary. Keys are emitted sorted, as
// Envoy does, so lines are stable whatever order the configuration used.
// path names the dictionary in errors; parsers are the formatter
// extensions' command parsers.
func compileJSON(s *structpb.Struct, typed, omitEmpty bool, path string, parsers []CommandParser) (*Formatter, error) {
	root, err := compileJSONStruct(s, path, parsers)
	if err != nil {
		return nil, err
	}
	return &Formatter{json: &jsonFormat{root: root, typed: typed, omitEmpty: omitEmpty}}, nil
}

func compileJSONStruct(s *structpb.Struct, path string, parsers []CommandParser) (jsonValue, error) {
	keys := make([]string, 0, len(s.GetFields()))
	for k := range s.GetFields() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	v := jsonValue{kind: jsonObject}
	for _, k := range keys {
		fv, err := compileJSONValue(s.GetFields()[k], path+"."+k, parsers)
		if err != nil {
			return jsonValue{}, err
		}
		key := appendJSONString(nil, []byte(k))
		v.fields = append(v.fields, jsonField{key: string(append(key, ':')), value: fv})
	}
	return v, nil
}

func compileJSONValue(v *structpb.Value, path string, parsers []CommandParser) (jsonValue, error) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		parts, err := parse(k.StringValue, parsers)
		if err != nil {
			return jsonValue{}, fmt.Errorf("%s: %w", path, err)
		}
		jv := jsonValue{kind: jsonFormatted, parts: parts}
		if len(parts) == 1 && parts[0].op != opLiteral {
			jv.numeric = parts[0].numeric
		}
		return jv, nil
	case *structpb.Value_StructValue:
		return compileJSONStruct(k.StructValue, path, parsers)
	case *structpb.Value_ListValue:
		jv := jsonValue{kind: jsonList}
		for i, item := range k.ListValue.GetValues() {
			iv, err := compileJSONValue(item, fmt.Sprintf("%s[%d]", path, i), parsers)
			if err != nil {
				return jsonValue{}, err
			}
			jv.items = append(jv.items, iv)
		}
		return jv, nil
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return jsonValue{}, fmt.Errorf("%s: %v is not a JSON number", path, k.NumberValue)
		}
		return jsonValue{kind: jsonRaw, raw: strconv.FormatFloat(k.NumberValue, 'g', -1, 64)}, nil
	case *structpb.Value_BoolValue:
		return jsonValue{kind: jsonRaw, raw: strconv.FormatBool(k.BoolValue)}, nil
	default:
		return jsonValue{kind: jsonRaw, raw: "null"}, nil
	}
}

func (j *jsonFormat) append(dst []byte, e *Entry) []byte {
	dst, _ = j.value(dst, &j.root, e)
	return append(dst, '\n')
}

// value appends v and reports whether it had a value: false only for a
// typed single operator whose value is missing (null).
func (j *jsonFormat) value(dst []byte, v *jsonValue, e *Entry) ([]byte, bool) {
	switch v.kind {
	case jsonRaw:
		return append(dst, v.raw...), true
	case jsonObject:
		dst = append(dst, '{')
		first := true
		for i := range v.fields {
			f := &v.fields[i]
			start := len(dst)
			if !first {
				dst = append(dst, ',')
			}
			dst = append(dst, f.key...)
			var ok bool
			dst, ok = j.value(dst, &f.value, e)
			if !ok && j.omitEmpty {
				dst = dst[:start]
				continue
			}
			first = false
		}
		return append(dst, '}'), true
	case jsonList:
		dst = append(dst, '[')
		for i := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, _ = j.value(dst, &v.items[i], e)
		}
		return append(dst, ']'), true
	}
	return j.formatted(dst, v, e)
}

// formatted appends a format-string value.
func (j *jsonFormat) formatted(dst []byte, v *jsonValue, e *Entry) ([]byte, bool) {
	single := len(v.parts) == 1 && v.parts[0].op != opLiteral
	if j.typed && single && v.parts[0].op == opMetadata {
		// Metadata keeps its own JSON type (a struct is an object), as
		// Envoy's typed values do, untruncated.
		start := len(dst)
		dst, ok := v.parts[0].metadata.appendTyped(dst, e)
		if !ok {
			return append(dst[:start], "null"...), false
		}
		return dst, true
	}
	if j.typed && single && v.parts[0].op == opFilterState {
		// A TYPED object is a JSON object, as Envoy's typed values are.
		start := len(dst)
		dst, ok := v.parts[0].filterState.appendTyped(dst, e)
		if !ok {
			return append(dst[:start], "null"...), false
		}
		return dst, true
	}
	if tp, ok := v.parts[0].ext.(TypedProvider); ok && j.typed && single && v.parts[0].op == opExtension {
		js, ok := tp.JSONValue(e)
		if !ok {
			return append(dst, "null"...), false
		}
		return append(dst, js...), true
	}
	if j.typed && single {
		start := len(dst)
		dst, ok := v.parts[0].append(dst, e)
		if !ok {
			return append(dst[:start], "null"...), false
		}
		if v.numeric {
			return dst, true
		}
		return quoteInPlace(dst, start), true
	}
	start := len(dst)
	missing := false
	for i := range v.parts {
		var ok bool
		dst, ok = v.parts[i].append(dst, e)
		if !ok {
			missing = true
			if !j.omitEmpty {
				dst = append(dst, '-')
			}
		}
	}
	if single && missing && j.omitEmpty {
		return append(dst[:start], "null"...), false
	}
	return quoteInPlace(dst, start), true
}

// quoteInPlace turns dst[start:] into a JSON string. Values rarely need
// escaping; when one does, a stack buffer (or, for a long value, a copy)
// holds the raw bytes while they are re-appended escaped.
func quoteInPlace(dst []byte, start int) []byte {
	raw := dst[start:]
	clean := true
	for _, c := range raw {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean {
		dst = append(dst, 0)
		copy(dst[start+1:], dst[start:len(dst)-1])
		dst[start] = '"'
		return append(dst, '"')
	}
	var stack [512]byte
	var tmp []byte
	if len(raw) <= len(stack) {
		tmp = stack[:copy(stack[:], raw)]
	} else {
		tmp = slices.Clone(raw)
	}
	return appendJSONString(dst[:start], tmp)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD so that every line stays valid JSON.
func appendJSONString(dst []byte, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}
