package bootstrap

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// jsonWalker checks a generic JSON tree against message descriptors,
// following protojson's rules, and records every problem with its path.
type jsonWalker struct {
	r *decodeReport
	// fromYAML adds YAML-specific hints to errors.
	fromYAML bool
	// rewrote is set when the walk rewrote a value of the tree (an enum
	// name in another case): the tree, not the input, must be decoded.
	rewrote bool
	// optionalAny is the path of the typed_config of the optional HTTP
	// filter being walked: an unknown type there leaves the filter out
	// (see stubAny) rather than failing the file.
	optionalAny string
	// anyName is the configured name beside the typed_config being
	// walked (a TypedExtensionConfig, a filter), so that an unknown type
	// there is refused with what the table of extensions says of that
	// name when its type's package does not spell it (see stubAny).
	anyName string
}

// message checks v, the JSON form of a message of type md.
func (w *jsonWalker) message(md protoreflect.MessageDescriptor, v any, path string, depth int) {
	if depth > maxDepth {
		w.r.fail(path, "nested more than %d levels deep", maxDepth)
		return
	}
	switch {
	case md.FullName() == anyFullName:
		w.any(v, path, depth)
		return
	case isFreeFormJSON(md.FullName()):
		// Anything goes inside, but a Struct is an object and a ListValue
		// a list.
		_, isObject := v.(map[string]any)
		_, isList := v.([]any)
		switch {
		case md.FullName() == "google.protobuf.Struct" && !isObject:
			w.r.fail(path, "expected an object, got %s", jsonKind(v))
		case md.FullName() == "google.protobuf.ListValue" && !isList:
			w.r.fail(path, "expected a list, got %s", jsonKind(v))
		}
		return
	case hasScalarJSON(md.FullName()):
		if !acceptsWellKnown(md, v) {
			w.r.fail(path, "invalid value %s for a %s", jsonText(v), md.FullName())
		}
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		w.r.fail(path, "expected an object, got %s", jsonKind(v))
		return
	}
	w.fields(md, obj, path, depth, false)
}

// fields checks the members of a JSON object holding a message of type md.
// In an Any, "@type" is the type URL, not a field.
func (w *jsonWalker) fields(md protoreflect.MessageDescriptor, obj map[string]any, path string, depth int, inAny bool) {
	seen := map[protoreflect.FieldNumber]string{}
	seenOneof := map[protoreflect.FullName]string{}
	for _, key := range sortedKeys(obj) {
		if inAny && key == "@type" {
			continue
		}
		fd := jsonField(md, key)
		if fd == nil {
			w.r.unknownField(childPath(path, key))
			continue
		}
		p := childPath(path, string(fd.Name()))
		if other, dup := seen[fd.Number()]; dup {
			w.r.fail(p, "given twice (as %q and %q)", other, key)
			continue
		}
		seen[fd.Number()] = key
		val := obj[key]
		if val == nil && !acceptsNull(fd) {
			// protojson treats null as "not set".
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if other, dup := seenOneof[od.FullName()]; dup {
				w.r.fail(p, "only one field of %s may be set, and %s is set too", od.Name(), other)
				continue
			}
			seenOneof[od.FullName()] = string(fd.Name())
		}
		if md.FullName() == httpFilterName && fd.Name() == "typed_config" && isOptionalFilter(obj) {
			w.optionalAny = p
		}
		if fd.Name() == "typed_config" {
			w.anyName = siblingName(md, obj)
		}
		obj[key] = w.field(fd, val, p, depth)
		w.optionalAny = ""
		w.anyName = ""
	}
}

// siblingName is the string "name" member of obj, a message of type md
// that has a name field, or "".
func siblingName(md protoreflect.MessageDescriptor, obj map[string]any) string {
	fd := md.Fields().ByName("name")
	if fd == nil || fd.Kind() != protoreflect.StringKind {
		return ""
	}
	name, _ := obj["name"].(string)
	return name
}

// jsonField resolves an object key the way protojson does: the JSON
// (lowerCamel) name, then the proto name, or [full.name] for an extension.
func jsonField(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	if len(key) > 2 && key[0] == '[' && key[len(key)-1] == ']' {
		return extensionField(md, protoreflect.FullName(key[1:len(key)-1]))
	}
	if fd := md.Fields().ByJSONName(key); fd != nil {
		return fd
	}
	return md.Fields().ByTextName(key)
}

// extensionField resolves an extension of md by its full name, or nil.
func extensionField(md protoreflect.MessageDescriptor, name protoreflect.FullName) protoreflect.FieldDescriptor {
	xt, err := protoregistry.GlobalTypes.FindExtensionByName(name)
	if err != nil {
		return nil
	}
	fd := xt.TypeDescriptor()
	if fd.ContainingMessage().FullName() != md.FullName() {
		return nil
	}
	return fd
}

// field checks the value of one field: a list, a map or a single value. It
// returns the value, rewritten where the walk rewrites one (see single).
func (w *jsonWalker) field(fd protoreflect.FieldDescriptor, v any, path string, depth int) any {
	switch {
	case fd.IsList():
		list, ok := v.([]any)
		if !ok {
			// A single element in place of a list is a list of one, as
			// protobuf's JSON parser reads it with the legacy syntax
			// that Envoy's loader gets (JsonStringToMessage always
			// allows it): Envoy's own sandboxes write such lists.
			w.rewrote = true
			return []any{w.element(fd, v, path, depth)}
		}
		for i, elem := range list {
			list[i] = w.element(fd, elem, indexPath(path, i), depth)
		}
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			w.r.fail(path, "expected an object (a map), got %s", jsonKind(v))
			return v
		}
		for _, key := range sortedKeys(obj) {
			p := keyPath(path, key)
			if !validMapKey(fd.MapKey().Kind(), key) {
				w.r.fail(p, "invalid %s map key %q", fd.MapKey().Kind(), key)
				continue
			}
			obj[key] = w.element(fd.MapValue(), obj[key], p, depth)
		}
	default:
		return w.single(fd, v, path, depth)
	}
	return v
}

// element checks one list element or map value; unlike a field, it may not
// be null (except as a google.protobuf.Value).
func (w *jsonWalker) element(fd protoreflect.FieldDescriptor, v any, path string, depth int) any {
	if v == nil && !acceptsNull(fd) {
		w.r.fail(path, "null is not allowed here")
		return v
	}
	return w.single(fd, v, path, depth)
}

// single checks one value of fd's type and returns it. An enum name in
// another case than its definition's (round_robin for ROUND_ROBIN) is
// rewritten, as Envoy's loader accepts it.
func (w *jsonWalker) single(fd protoreflect.FieldDescriptor, v any, path string, depth int) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		w.message(fd.Message(), v, path, depth+1)
	case protoreflect.EnumKind:
		if s, ok := v.(string); ok {
			if fd.Enum().Values().ByName(protoreflect.Name(s)) != nil {
				return v
			}
			if name, ok := enumNameFold(fd.Enum(), s); ok {
				w.rewrote = true
				return name
			}
			// protojson drops unknown enum names with the unknown
			// fields, so they follow the same policy.
			if w.r.allowUnknown {
				w.r.unknownField(path)
				return v
			}
			w.r.fail(path, "unknown value %q for enum %s", s, fd.Enum().FullName())
			return v
		}
		w.scalar(fd, v, path)
	default:
		w.scalar(fd, v, path)
	}
	return v
}

// enumNameFold finds the value of ed whose name is s in another case.
func enumNameFold(ed protoreflect.EnumDescriptor, s string) (string, bool) {
	values := ed.Values()
	for i := range values.Len() {
		if name := string(values.Get(i).Name()); strings.EqualFold(name, s) {
			return name, true
		}
	}
	return "", false
}

// scalar checks one scalar value against protojson's rules.
func (w *jsonWalker) scalar(fd protoreflect.FieldDescriptor, v any, path string) {
	if acceptsScalar(fd, v) {
		return
	}
	if _, isBool := v.(bool); isBool && w.fromYAML && fd.Kind() == protoreflect.StringKind {
		// Like Envoy's YAML reader, YAML 1.1 reads unquoted y, n, yes,
		// no, on and off as booleans.
		w.r.fail(path, "invalid value %s for a string field (quote the value: YAML reads unquoted yes/no/on/off/y/n as booleans)", jsonText(v))
		return
	}
	w.r.fail(path, "invalid value %s for a %s field", jsonText(v), fd.Kind())
}

// any checks the JSON form of a google.protobuf.Any: "@type" plus either the
// embedded message's own fields or, for well-known types with a special
// JSON form, a "value" member.
func (w *jsonWalker) any(v any, path string, depth int) {
	obj, ok := v.(map[string]any)
	if !ok {
		w.r.fail(path, "expected an object with \"@type\", got %s", jsonKind(v))
		return
	}
	if len(obj) == 0 {
		return
	}
	rawURL, ok := obj["@type"]
	if !ok {
		w.r.fail(path, "missing \"@type\"")
		return
	}
	typeURL, ok := rawURL.(string)
	if !ok {
		w.r.fail(childPath(path, "@type"), "expected a string, got %s", jsonKind(rawURL))
		return
	}
	mt, err := w.r.resolver().FindMessageByURL(typeURL)
	if err != nil {
		w.stubAny(obj, path, typeURL)
		return
	}
	md := mt.Descriptor()
	if !hasSpecialJSON(md.FullName()) {
		w.fields(md, obj, path, depth+1, true)
		return
	}
	for _, key := range sortedKeys(obj) {
		if key != "@type" && key != "value" {
			w.r.unknownField(childPath(path, key))
		}
	}
	if val, ok := obj["value"]; ok {
		w.message(md, val, path, depth+1)
	} else if md.FullName() != "google.protobuf.Empty" {
		w.r.fail(path, "missing \"value\" for a %s", md.FullName())
	}
}

// placeholderURL is the type an Any of an unknown type is replaced with.
const placeholderURL = "type.googleapis.com/google.protobuf.Empty"

// stubAny handles an Any whose type this build does not know. An unknown
// type must not hide the file's other problems (Envoy reports one error
// and stops; Outrigger promises all of them): the Any becomes an empty
// placeholder, so the tree still decodes and is validated, and the error
// is recorded as stubbed; the caller drops the errors the placeholder
// itself causes below path. Without a resolvable placeholder the Any is a
// plain failure.
func (w *jsonWalker) stubAny(obj map[string]any, path, typeURL string) {
	if _, err := w.r.resolver().FindMessageByURL(placeholderURL); err != nil {
		w.r.fail(path, "unknown type %q", typeURL)
		return
	}
	for k := range obj {
		delete(obj, k)
	}
	obj["@type"] = placeholderURL
	w.rewrote = true
	if path == w.optionalAny {
		// No filter of this build has the placeholder's type: the
		// chain builders leave the filter out, as Envoy does one it has
		// no factory for.
		return
	}
	w.r.stub(path, typeURL, w.anyName)
}

// isOptionalFilter reports whether the JSON object of an HttpFilter sets
// is_optional (either spelling) to true.
func isOptionalFilter(obj map[string]any) bool {
	for _, k := range []string{"is_optional", "isOptional"} {
		if b, ok := obj[k].(bool); ok && b {
			return true
		}
	}
	return false
}
