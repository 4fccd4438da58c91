package grpcjsontranscoder

import (
	"bytes"
	"encoding/json"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// fixEnumCase rewrites the enum names of a JSON body in their declared
// case (case_insensitive_enum_parsing), walking the body along the
// message type: in is the request type, bodyPath the body field's path
// (nil when the body is the whole message). A body that does not parse
// is returned as it is, for the JSON parser to refuse.
func fixEnumCase(body []byte, in protoreflect.MessageDescriptor, bodyPath []protoreflect.FieldDescriptor) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body
	}
	if bodyPath != nil {
		v = fixField(v, bodyPath[len(bodyPath)-1], false)
	} else {
		v = fixMessage(v, in)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}

// fixMessage fixes the enum names of a JSON object of type md.
func fixMessage(v any, md protoreflect.MessageDescriptor) any {
	obj, ok := v.(map[string]any)
	if !ok || strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return v
	}
	fields := md.Fields()
	for k, fv := range obj {
		fd := fields.ByJSONName(k)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(k))
		}
		if fd != nil {
			obj[k] = fixField(fv, fd, false)
		}
	}
	return v
}

// fixField fixes the value of field fd; elem: v is one element of it.
func fixField(v any, fd protoreflect.FieldDescriptor, elem bool) any {
	switch {
	case fd.IsMap() && !elem:
		if obj, ok := v.(map[string]any); ok {
			for k, mv := range obj {
				obj[k] = fixField(mv, fd.MapValue(), true)
			}
		}
		return v
	case fd.IsList() && !elem:
		if arr, ok := v.([]any); ok {
			for i, ev := range arr {
				arr[i] = fixField(ev, fd, true)
			}
		}
		return v
	case fd.Kind() == protoreflect.EnumKind:
		s, ok := v.(string)
		if !ok {
			return v
		}
		vals := fd.Enum().Values()
		for i := range vals.Len() {
			if name := string(vals.Get(i).Name()); strings.EqualFold(name, s) {
				return name
			}
		}
		return v
	case fd.Message() != nil:
		return fixMessage(v, fd.Message())
	}
	return v
}
