package fieldpath

import "fmt"

// Error is one problem of a configuration, located by the proto-style
// path of its field relative to what the function reporting it was given.
// It reads like the bootstrap loader's FieldError, which callers convert
// it to: the packages that use it (DNS resolvers, load balancers) sit
// below the loader, whose tests link every extension in.
type Error struct {
	Path   string
	Reason string
}

// Error renders "<path>: <reason>".
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Errorf builds an Error.
func Errorf(path, format string, args ...any) *Error {
	return &Error{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// Under moves an Error's path under prefix ("a.b" and "c" give "a.b.c",
// "[1].c" gives "a.b[1].c"); another error gets the prefix in front of
// its text.
func Under(prefix string, err error) error {
	fe, ok := err.(*Error)
	if !ok {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	path := prefix
	switch {
	case fe.Path == "":
	case prefix == "":
		path = fe.Path
	case fe.Path[0] == '[':
		path += fe.Path
	default:
		path += "." + fe.Path
	}
	return &Error{Path: path, Reason: fe.Reason}
}
