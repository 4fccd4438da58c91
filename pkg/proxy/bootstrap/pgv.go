package bootstrap

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// pgvError is the shape of every error type protoc-gen-validate generates
// (BootstrapValidationError, AdminValidationError...): a Go field name, a
// reason and, for nested messages, the nested message's error as cause.
type pgvError interface {
	error
	Field() string
	Reason() string
	Cause() error
	Key() bool
	ErrorName() string
}

// pgvMultiError is the shape of the generated XxxMultiError types that
// ValidateAll returns.
type pgvMultiError interface {
	error
	AllErrors() []error
}

// pgvFieldErrors flattens a ValidateAll error of a message of type md at
// path into FieldErrors with proto-style paths. The generated errors name
// fields by their Go names ("SocketAddress", "Listeners[0]"), so each level
// is translated back through the descriptor it belongs to.
func pgvFieldErrors(err error, md protoreflect.MessageDescriptor, path string) []error {
	switch e := err.(type) {
	case pgvMultiError:
		var out []error
		for _, sub := range e.AllErrors() {
			out = append(out, pgvFieldErrors(sub, md, path)...)
		}
		return out
	case pgvError:
		p, sub := pgvField(md, e.Field())
		p = childPath(path, p)
		cause := e.Cause()
		if cause == nil {
			return []error{&FieldError{Path: p, Reason: e.Reason()}}
		}
		if sub != nil && isPGV(cause) {
			return pgvFieldErrors(cause, sub, p)
		}
		return []error{&FieldError{Path: p, Reason: e.Reason() + ": " + cause.Error()}}
	default:
		return []error{&FieldError{Path: path, Reason: err.Error()}}
	}
}

// isPGV reports whether err is a generated validation error.
func isPGV(err error) bool {
	switch err.(type) {
	case pgvError, pgvMultiError:
		return true
	}
	return false
}

// pgvField translates a generated error's field ("PortValue",
// "Listeners[2]", "FilterMetadata[key]", or a oneof's "RouteSpecifier")
// into the proto path segment, and returns the descriptor of the message the
// field holds (nil for scalars) for the cause's fields.
func pgvField(md protoreflect.MessageDescriptor, goField string) (string, protoreflect.MessageDescriptor) {
	goName, index, indexed := strings.Cut(goField, "[")
	index = strings.TrimSuffix(index, "]")
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if goCamelCase(string(fd.Name())) != goName {
			continue
		}
		name := string(fd.Name())
		switch {
		case !indexed:
			return name, fd.Message()
		case fd.IsMap():
			seg := name + "[" + index + "]"
			if fd.MapKey().Kind() == protoreflect.StringKind {
				seg = keyPath(name, index)
			}
			return seg, fd.MapValue().Message()
		default:
			return name + "[" + index + "]", fd.Message()
		}
	}
	oneofs := md.Oneofs()
	for i := range oneofs.Len() {
		if od := oneofs.Get(i); goCamelCase(string(od.Name())) == goName {
			return string(od.Name()), nil
		}
	}
	// Unknown to the descriptor: keep the generated name rather than lose it.
	if indexed {
		return goName + "[" + index + "]", nil
	}
	return goName, nil
}

// goCamelCase is the Go name protoc-gen-go gives a field, the rule of
// google.golang.org/protobuf/internal/strs.GoCamelCase (internal, so copied)
// for the names a field can have (no dots).
func goCamelCase(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' && i == 0:
			b = append(b, 'X')
		case c == '_' && i+1 < len(s) && isLower(s[i+1]):
			// "_x" starts a word: drop the underscore.
		case isDigit(c):
			b = append(b, c)
		default:
			if isLower(c) {
				c -= 'a' - 'A'
			}
			b = append(b, c)
			for ; i+1 < len(s) && isLower(s[i+1]); i++ {
				b = append(b, s[i+1])
			}
		}
	}
	return string(b)
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
