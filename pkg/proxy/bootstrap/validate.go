package bootstrap

import (
	"errors"
	"slices"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// Validate checks a loaded configuration and returns every problem, as
// errors.Join of *FieldError, or nil. Three passes run, and their findings
// are reported in this order:
//
//  1. the protoc-gen-validate constraints of the v3 API (b.ValidateAll(),
//     and the same for each typed_config's contents), translated to
//     proto-style paths;
//  2. the support check: any populated field Outrigger does not implement,
//     and any typed_config whose extension is not registered in ext, is
//     disabled, or belongs to another category than the field expects;
//  3. semantic checks the annotations cannot express (unique listener
//     names, a listener needs an address, the router ends the HTTP
//     filters...).
//
// ext is the registry of the extensions linked in (builtin.Registry).
// Validate has no side effects.
func Validate(b *bootstrapv3.Bootstrap, ext *extension.Registry) error {
	if b == nil {
		return &FieldError{Reason: "no configuration"}
	}
	return errors.Join(validationErrors(b, ext)...)
}

// validationErrors is Validate's list of problems.
func validationErrors(b *bootstrapv3.Bootstrap, ext *extension.Registry) []error {
	if b == nil {
		return []error{&FieldError{Reason: "no configuration"}}
	}
	errs := constraintAndSupportErrors(b, ext)
	return append(errs, semanticErrors(b, ext)...)
}

// validatable is a generated API message: it has ValidateAll.
type validatable interface {
	proto.Message
	ValidateAll() error
}

// constraintAndSupportErrors runs Validate's first two passes on m, with
// paths relative to m: the protoc-gen-validate constraints, then the
// support check.
func constraintAndSupportErrors(m validatable, ext *extension.Registry) []error {
	var errs []error
	if err := m.ValidateAll(); err != nil {
		errs = append(errs, pgvFieldErrors(err, m.ProtoReflect().Descriptor(), "")...)
	}
	c := supportChecker{ext: ext}
	c.message(m.ProtoReflect(), "")
	errs = append(errs, c.pgv...)
	// A constraint inside a field Outrigger does not support anyway is
	// noise: the field itself is the problem to fix.
	errs = slices.DeleteFunc(errs, func(err error) bool {
		return insideAny(err, c.unsupported)
	})
	return append(errs, c.unsupported...)
}

// insideAny reports whether err is a FieldError located at or below the
// path of one of the errors in outer.
func insideAny(err error, outer []error) bool {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return false
	}
	for _, o := range outer {
		var ofe *FieldError
		if errors.As(o, &ofe) && isWithin(fe.Path, ofe.Path) {
			return true
		}
	}
	return false
}

// isWithin reports whether path is base or a path below it.
func isWithin(path, base string) bool {
	rest, ok := strings.CutPrefix(path, base)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}
