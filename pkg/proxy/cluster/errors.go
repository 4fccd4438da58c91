package cluster

import (
	"fmt"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// configErrorf builds one problem of a cluster's configuration, located by
// the proto-style path of the field relative to the configuration the
// caller handed in. It is a *bootstrap.FieldError, as Load and Validate
// report, so cluster problems read and unwrap like the rest of the
// bootstrap's.
func configErrorf(path, format string, args ...any) *bootstrap.FieldError {
	return &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// prefixed returns err with its path moved under prefix: nested builders
// report paths relative to the message they read, and their callers add
// where that message sits.
func prefixed(prefix string, err error) error {
	// The DNS resolvers' and the load balancers' errors.
	if ce, ok := err.(*fieldpath.Error); ok {
		err = &bootstrap.FieldError{Path: ce.Path, Reason: ce.Reason}
	}
	fe, ok := err.(*bootstrap.FieldError)
	if !ok {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return &bootstrap.FieldError{Path: join(prefix, fe.Path), Reason: fe.Reason}
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
