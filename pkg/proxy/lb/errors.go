package lb

import "github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"

// ConfigError is one problem of a load-balancing configuration, located by
// the proto-style path of its field relative to what the function reading
// it was given; the cluster builder converts it to the loader's
// FieldError.
type ConfigError = fieldpath.Error

// fieldErrorf builds a ConfigError.
func fieldErrorf(path, format string, args ...any) *ConfigError {
	return fieldpath.Errorf(path, format, args...)
}

// prefixAll moves every error's path under prefix.
func prefixAll(prefix string, errs []error) []error {
	for i, err := range errs {
		errs[i] = fieldpath.Under(prefix, err)
	}
	return errs
}
