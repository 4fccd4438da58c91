package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedComposite lists the fields of ExtensionWithMatcher (the match
// delegate wrapping any HTTP filter with an xDS matcher, whose fields are
// in supportedFiltersTail), its per-route override and the composite
// filter's (its own matcher, when straight in http_filters, and
// CompositePerRoute's, its named filter chains and ExecuteFilterAction).
// The deprecated matcher (the envoy.config.common.matcher.v3 form) and an
// action's dynamic_config (ECDS) are refused.
var supportedComposite = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.common.matching.v3.ExtensionWithMatcher.xds_matcher":         {},
	"envoy.extensions.common.matching.v3.ExtensionWithMatcher.extension_config":    {},
	"envoy.extensions.common.matching.v3.ExtensionWithMatcherPerRoute.xds_matcher": {},

	"envoy.extensions.filters.http.composite.v3.Composite.named_filter_chains":         {},
	"envoy.extensions.filters.http.composite.v3.Composite.matcher":                     {},
	"envoy.extensions.filters.http.composite.v3.CompositePerRoute.matcher":             {},
	"envoy.extensions.filters.http.composite.v3.FilterChainConfiguration.typed_config": {},
	"envoy.extensions.filters.http.composite.v3.ExecuteFilterAction.typed_config":      {},
	"envoy.extensions.filters.http.composite.v3.ExecuteFilterAction.filter_chain":      {},
	"envoy.extensions.filters.http.composite.v3.ExecuteFilterAction.filter_chain_name": {},
	"envoy.extensions.filters.http.composite.v3.ExecuteFilterAction.sample_percent":    {},
}
