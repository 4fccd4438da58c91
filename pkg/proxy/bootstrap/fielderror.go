package bootstrap

import "fmt"

// FieldError is one configuration problem, located by the proto-style path
// of the field it concerns (snake_case names, [i] for list elements,
// ["key"] for map entries, typed_config contents continuing the path of
// their typed_config field). Load and Validate return errors.Join of these
// (and so does cluster.NewManager, for problems only building reveals), so
// callers print one problem per line and tests can inspect them with
// errors.As.
type FieldError struct {
	// Path locates the field, e.g. "admin.address.socket_address.port_value".
	// It is empty for a problem of the whole configuration.
	Path string
	// Reason says what is wrong, in lower case.
	Reason string
}

// Error renders "<path>: <reason>".
func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// fieldErrorf builds a *FieldError with a formatted reason.
func fieldErrorf(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)}
}
