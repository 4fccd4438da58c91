package bootstrap

import "regexp"

// bootstrapCategory is the category of bootstrap extensions (the
// internal_listener one, see server/internal_listeners.go).
const bootstrapCategory = "envoy.bootstrap"

// bootstrapExtensionPath is the typed_config of a bootstrap_extensions
// entry: a TypedExtensionConfig like many others, but the one slot where
// bootstrap extensions go, and where nothing else does.
var bootstrapExtensionPath = regexp.MustCompile(`^bootstrap_extensions\[\d+\]\.typed_config$`)

// slotCategories narrows the categories a TypedExtensionConfig's
// typed_config may have by where it is: a bootstrap_extensions entry takes
// only bootstrap extensions, and no other slot takes them (the generic
// rule never lists bootstrapCategory).
func slotCategories(path string, categories []string) []string {
	if bootstrapExtensionPath.MatchString(path) {
		return []string{bootstrapCategory}
	}
	if earlyMutationPath.MatchString(path) {
		return []string{earlyMutationCategory}
	}
	if extProcResponsePath.MatchString(path) {
		return []string{extProcResponseCategory}
	}
	if extProcModifierPath.MatchString(path) {
		return []string{extProcModifierCategory}
	}
	return categories
}

// earlyMutationCategory is the category of the connection manager's
// early_header_mutation_extensions, the one slot where they go
// (httpconn early_mutation.go).
const earlyMutationCategory = "envoy.http.early_header_mutation"

// earlyMutationPath is the typed_config of an
// early_header_mutation_extensions entry.
var earlyMutationPath = regexp.MustCompile(`\.early_header_mutation_extensions\[\d+\]\.typed_config$`)
