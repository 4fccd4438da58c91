package lb

import "fmt"

// ConfigError is one problem of a load-balancing configuration, located by
// the proto-style path of its field relative to what the function reading
// it was given. It reads like bootstrap.FieldError, which the cluster
// builder converts it to (this package sits below the bootstrap loader,
// whose tests link every extension in).
type ConfigError struct {
	Path   string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// fieldErrorf builds a ConfigError.
func fieldErrorf(path, format string, args ...any) *ConfigError {
	return &ConfigError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// prefixed moves err's path under prefix.
func prefixed(prefix string, err error) error {
	fe, ok := err.(*ConfigError)
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
	return &ConfigError{Path: path, Reason: fe.Reason}
}

// prefixAll moves every error's path under prefix.
func prefixAll(prefix string, errs []error) []error {
	for i, err := range errs {
		errs[i] = prefixed(prefix, err)
	}
	return errs
}
