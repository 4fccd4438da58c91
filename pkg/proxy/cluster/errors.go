package cluster

import "fmt"

// ConfigError is one problem of a cluster's configuration, located by the
// proto-style path of the field (snake_case names, [i] for list elements),
// relative to the configuration the caller handed in.
type ConfigError struct {
	Path   string
	Reason string
}

// Error renders "<path>: <reason>".
func (e *ConfigError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// configErrorf builds a *ConfigError with a formatted reason.
func configErrorf(path, format string, args ...any) *ConfigError {
	return &ConfigError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// prefixed returns err with its path moved under prefix: nested builders
// report paths relative to the message they read, and their callers add
// where that message sits.
func prefixed(prefix string, err error) error {
	ce, ok := err.(*ConfigError)
	if !ok {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return &ConfigError{Path: join(prefix, ce.Path), Reason: ce.Reason}
}

// join appends a field path to a parent path.
func join(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "":
		return parent
	case child[0] == '[':
		return parent + child
	default:
		return parent + "." + child
	}
}

// index is the path of element i of the list at path.
func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
