package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedMatchingCommon lists the fields of the unified matcher's
// keep_matching, of the inputs and custom matchers package httpmatch
// takes in every HTTP matcher (customdata.go: the CEL and dynamic
// metadata inputs with their matchers, the environment variable), and of
// the matcher cluster specifier plugin (package
// clusterspecifier/matcher).
var supportedMatchingCommon = map[protoreflect.FullName]fieldSupport{
	"xds.type.matcher.v3.Matcher.OnMatch.keep_matching": {},

	"xds.type.matcher.v3.CelMatcher.expr_match":  {},
	"xds.type.matcher.v3.CelMatcher.description": {},
	"xds.type.v3.CelExpression.parsed_expr":      {},
	"xds.type.v3.CelExpression.checked_expr":     {},
	"xds.type.v3.CelExpression.cel_expr_parsed":  {},
	"xds.type.v3.CelExpression.cel_expr_checked": {},
	"xds.type.v3.CelExpression.cel_expr_string":  {},

	"envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput.filter":                {},
	"envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput.path":                  {},
	"envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput.PathSegment.key":       {},
	"envoy.extensions.matching.input_matchers.metadata.v3.Metadata.value":                           {},
	"envoy.extensions.matching.input_matchers.metadata.v3.Metadata.invert":                          {},
	"envoy.extensions.matching.common_inputs.environment_variable.v3.Config.name":                   {},
	"envoy.extensions.router.cluster_specifiers.matcher.v3.MatcherClusterSpecifier.cluster_matcher": {},
	"envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction.cluster":                   {},
}
