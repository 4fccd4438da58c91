package bootstrap

import (
	"errors"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// ValidateListener checks one listener the way Validate checks each
// element of static_resources.listeners, for listeners that arrive later
// (from a dynamic resource file): the protoc-gen-validate constraints
// (typed_config contents included), the support check against ext, and the
// listener's semantic checks. Paths are relative to the listener
// ("filter_chains[0].filters[0].typed_config.route_config..."); the caller
// prefixes them with where the listener came from. It returns errors.Join
// of *FieldError, or nil. A nil ext means DefaultExtensions(). Checks
// between listeners (unique names and addresses) are the caller's, which
// knows the other listeners.
func ValidateListener(l *listenerv3.Listener, ext *Extensions) error {
	if l == nil {
		return &FieldError{Reason: "no listener"}
	}
	if ext == nil {
		ext = DefaultExtensions()
	}
	errs := constraintAndSupportErrors(l, ext)
	errs = append(errs, listenerSemanticErrors(l)...)
	return errors.Join(errs...)
}

// listenerSemanticErrors runs the semantic checks of one static listener
// on l, with paths relative to l: one set of rules for static and dynamic
// listeners.
func listenerSemanticErrors(l *listenerv3.Listener) []error {
	var s semanticChecker
	s.listener(l, "")
	return s.errs
}
