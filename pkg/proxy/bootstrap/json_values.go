package bootstrap

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// acceptsScalar reports whether protojson accepts v as a value of the
// scalar field fd. Asking protojson itself, on a one-field object, keeps the
// rules (quoted numbers, exponents, ranges, base64, "NaN") exactly its own.
func acceptsScalar(fd protoreflect.FieldDescriptor, v any) bool {
	if fd.IsExtension() {
		return true // left to protojson, which reports the field's name
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	if fd.IsList() {
		raw = append(append([]byte{'['}, raw...), ']')
	}
	doc := append([]byte(`{`+strconv.Quote(fd.JSONName())+`:`), raw...)
	doc = append(doc, '}')
	holder := dynamicpb.NewMessage(fd.ContainingMessage())
	return protojson.Unmarshal(doc, holder) == nil
}

// acceptsWellKnown reports whether protojson accepts v as the JSON form of
// the well-known type md (a Duration string, a wrapped scalar...).
func acceptsWellKnown(md protoreflect.MessageDescriptor, v any) bool {
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return protojson.Unmarshal(raw, dynamicpb.NewMessage(md)) == nil
}

// acceptsNull reports whether null is a value of fd rather than "unset".
func acceptsNull(fd protoreflect.FieldDescriptor) bool {
	if md := fd.Message(); md != nil {
		return md.FullName() == "google.protobuf.Value"
	}
	if ed := fd.Enum(); ed != nil {
		return ed.FullName() == "google.protobuf.NullValue"
	}
	return false
}

// validMapKey reports whether key (always a string in JSON) is a valid map
// key of kind k.
func validMapKey(k protoreflect.Kind, key string) bool {
	var err error
	switch k {
	case protoreflect.StringKind:
		return true
	case protoreflect.BoolKind:
		return key == "true" || key == "false"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		_, err = strconv.ParseInt(key, 10, 32)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		_, err = strconv.ParseInt(key, 10, 64)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		_, err = strconv.ParseUint(key, 10, 32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		_, err = strconv.ParseUint(key, 10, 64)
	default:
		return false
	}
	return err == nil
}

// sortedKeys returns obj's keys in order, so problems are reported in the
// same order on every run.
func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jsonKind names the JSON type of v for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// jsonText renders a value for an error message, shortened so a huge value
// cannot swamp the error list.
func jsonText(v any) string {
	const limit = 64
	raw, err := json.Marshal(v)
	if err != nil {
		return jsonKind(v)
	}
	if len(raw) > limit {
		return string(raw[:limit]) + "..."
	}
	return string(raw)
}
