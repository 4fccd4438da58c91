package bootstrap

import "google.golang.org/protobuf/reflect/protoregistry"

// maxDepth bounds how deeply the decoders follow nested input, so hostile
// input cannot exhaust the stack; real configurations stay far below it.
const maxDepth = 1000

// decodeReport collects what the decoders find while walking one source:
// unknown fields (errors, or dropped paths when they are allowed) and other
// field-level problems. Collecting instead of stopping lets Load report
// every problem at once.
type decodeReport struct {
	allowUnknown bool
	// types resolves Any type URLs; nil means every linked type.
	types   TypeResolver
	unknown []string
	errs    []error
	// stubbed are the Anys of a type this build does not know, each
	// replaced by an empty placeholder so that decoding goes on and the
	// rest of the configuration can still be checked (see Loaded.Partial).
	stubbed []error
}

// resolver returns where Any type URLs are looked up.
func (r *decodeReport) resolver() TypeResolver {
	if r.types == nil {
		return protoregistry.GlobalTypes
	}
	return r.types
}

// unknownField records an unknown field at path: an error, or, when unknown
// fields are allowed, a path for the caller's warnings.
func (r *decodeReport) unknownField(path string) {
	if r.allowUnknown {
		r.unknown = append(r.unknown, path)
		return
	}
	r.errs = append(r.errs, &FieldError{Path: path, Reason: "unknown field"})
}

// fail records a problem that no option excuses.
func (r *decodeReport) fail(path, format string, args ...any) {
	r.errs = append(r.errs, fieldErrorf(path, format, args...))
}

// stub records an Any at path of an unknown type that was replaced by a
// placeholder; name is the extension name configured beside it, if any.
func (r *decodeReport) stub(path, typeURL, name string) {
	r.stubbed = append(r.stubbed, &unknownTypeError{FieldError: fieldErrorf(path, "unknown type %q", typeURL), typeURL: typeURL, name: name})
}

// unknownTypeError is an Any of a type this build does not link in: the
// extension it configures is not supported, which Loaded.Problems explains
// with the table of extensions once the registry is known.
type unknownTypeError struct {
	*FieldError
	typeURL string
	// name is the configured extension name beside the Any, which the
	// table of extensions is searched by when the type's package does
	// not follow Envoy's naming convention.
	name string
}

// Unwrap exposes the located error.
func (e *unknownTypeError) Unwrap() error { return e.FieldError }

// failed reports whether any error has been recorded; stubbed Anys are
// not failures of the decoding itself.
func (r *decodeReport) failed() bool { return len(r.errs) > 0 }
