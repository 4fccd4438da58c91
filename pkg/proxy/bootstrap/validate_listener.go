package bootstrap

import (
	"errors"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// ValidateListener checks one listener the way Validate checks each
// element of static_resources.listeners, for listeners that arrive later
// (from a dynamic resource file): the protoc-gen-validate constraints
// (typed_config contents included), the support check against ext, and the
// listener's semantic checks. Paths are relative to the listener
// ("filter_chains[0].filters[0].typed_config.route_config..."); the caller
// prefixes them with where the listener came from. It returns errors.Join
// of *FieldError, or nil. ext is as for Validate. Checks
// between listeners (unique names and addresses) are the caller's, which
// knows the other listeners.
func ValidateListener(l *listenerv3.Listener, ext *extension.Registry) error {
	if l == nil {
		return &FieldError{Reason: "no listener"}
	}
	errs := constraintAndSupportErrors(l, ext)
	errs = append(errs, listenerSemanticErrors(l, ext)...)
	return errors.Join(errs...)
}

// listenerSemanticErrors runs the semantic checks of one static listener
// on l, with paths relative to l: one set of rules for static and dynamic
// listeners.
func listenerSemanticErrors(l *listenerv3.Listener, ext *extension.Registry) []error {
	s := semanticChecker{ext: ext}
	s.listener(l, "")
	return s.errs
}
