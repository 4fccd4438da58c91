package bootstrap

import (
	"errors"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// WithBuildErrors adds to the problems validation found those that only
// building the configuration reveals (a bad format string, a route that
// does not compile), so that one run reports every problem of a file.
//
// A configuration that failed validation is built only to collect these,
// and building it meets the invalid parts again: a build error located at
// or below a path a validation error already names repeats that problem in
// other words and is dropped, and so is one with the same text. Build
// errors keep their order after the validation errors.
func WithBuildErrors(validation, build error) error {
	reported := fieldpath.Split(validation)
	seen := make(map[string]bool, len(reported))
	for _, err := range reported {
		seen[err.Error()] = true
	}
	out := reported
	for _, err := range fieldpath.Split(build) {
		if seen[err.Error()] || insidePathOf(err, reported) {
			continue
		}
		seen[err.Error()] = true
		out = append(out, err)
	}
	return errors.Join(out...)
}

// insidePathOf reports whether err concerns a field at or below the path of
// one of the located errors in outer.
func insidePathOf(err error, outer []error) bool {
	path := errorPath(err)
	if path == "" {
		return false
	}
	for _, o := range outer {
		if base := errorPath(o); base != "" && isWithin(path, base) {
			return true
		}
	}
	return false
}

// errorPath returns the configuration path err is about, "" when it names
// none. It reads the text before the first ": ", as every located problem
// starts with its full path: a *FieldError's Error does, and build errors
// wrap theirs with the path as a prefix (where errors.As would find an
// inner *FieldError holding only the relative rest).
func errorPath(err error) string {
	path, _, ok := strings.Cut(err.Error(), ": ")
	if !ok || strings.ContainsAny(path, " '\"") {
		return ""
	}
	return path
}
