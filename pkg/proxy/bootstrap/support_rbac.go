package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedRBAC lists the fields of the RBAC HTTP and network filters
// (envoy.filters.http.rbac, envoy.filters.network.rbac) and of the shared
// envoy.config.rbac.v3 policies that Outrigger implements (see
// supportedCore). The matcher forms (matcher, shadow_matcher) are the xDS
// matcher (support_filters_tail.go lists its fields, the RBAC action and
// the inputs). Not listed, so refused with their path:
// audit_logging_options. A principal's custom extension is the
// mtls_authenticated principal and a permission's matcher the
// upstream_ip_port matcher (rbacengine refuses other types with their
// path).
var supportedRBAC = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.rbac.v3.RBAC.rules":                    {},
	"envoy.extensions.filters.http.rbac.v3.RBAC.rules_stat_prefix":        {},
	"envoy.extensions.filters.http.rbac.v3.RBAC.shadow_rules":             {},
	"envoy.extensions.filters.http.rbac.v3.RBAC.shadow_rules_stat_prefix": {},
	"envoy.extensions.filters.http.rbac.v3.RBACPerRoute.rbac":             {},
	"envoy.extensions.filters.http.rbac.v3.RBAC.matcher":                  {},
	"envoy.extensions.filters.http.rbac.v3.RBAC.shadow_matcher":           {},
	"envoy.extensions.filters.http.rbac.v3.RBAC.track_per_rule_stats":     {},

	"envoy.extensions.filters.network.rbac.v3.RBAC.rules":                    {},
	"envoy.extensions.filters.network.rbac.v3.RBAC.shadow_rules":             {},
	"envoy.extensions.filters.network.rbac.v3.RBAC.shadow_rules_stat_prefix": {},
	"envoy.extensions.filters.network.rbac.v3.RBAC.stat_prefix":              {},
	"envoy.extensions.filters.network.rbac.v3.RBAC.matcher":                  {},
	"envoy.extensions.filters.network.rbac.v3.RBAC.shadow_matcher":           {},

	// The matcher forms' action.
	"envoy.config.rbac.v3.Action.name":   {},
	"envoy.config.rbac.v3.Action.action": {},
	// Both decide once per connection: the inputs do not change during
	// one (see the filter's package doc and docs/compat.md).
	"envoy.extensions.filters.network.rbac.v3.RBAC.enforcement_type": {},
	"envoy.extensions.filters.network.rbac.v3.RBAC.delay_deny":       {},

	"envoy.config.rbac.v3.RBAC.action":   {},
	"envoy.config.rbac.v3.RBAC.policies": {},

	"envoy.config.rbac.v3.Policy.permissions": {},
	"envoy.config.rbac.v3.Policy.principals":  {},
	// CEL conditions (package cel), with cel_config's features beyond
	// Envoy's defaults.
	"envoy.config.rbac.v3.Policy.condition":                             {},
	"envoy.config.rbac.v3.Policy.checked_condition":                     {},
	"envoy.config.rbac.v3.Policy.cel_config":                            {},
	"envoy.config.core.v3.CelExpressionConfig.enable_string_conversion": {},
	"envoy.config.core.v3.CelExpressionConfig.enable_string_concat":     {},
	"envoy.config.core.v3.CelExpressionConfig.enable_string_functions":  {},

	"envoy.config.rbac.v3.Permission.and_rules":              {},
	"envoy.config.rbac.v3.Permission.or_rules":               {},
	"envoy.config.rbac.v3.Permission.any":                    {},
	"envoy.config.rbac.v3.Permission.header":                 {},
	"envoy.config.rbac.v3.Permission.url_path":               {},
	"envoy.config.rbac.v3.Permission.uri_template":           {},
	"envoy.config.rbac.v3.Permission.destination_ip":         {},
	"envoy.config.rbac.v3.Permission.destination_port":       {},
	"envoy.config.rbac.v3.Permission.destination_port_range": {},
	// Dynamic metadata: no Outrigger filter sets any yet, so these match
	// as Envoy's do against empty metadata (see docs/compat.md).
	"envoy.config.rbac.v3.Permission.metadata":              {},
	"envoy.config.rbac.v3.Permission.not_rule":              {},
	"envoy.config.rbac.v3.Permission.requested_server_name": {},
	"envoy.config.rbac.v3.Permission.sourced_metadata":      {},
	"envoy.config.rbac.v3.Permission.Set.rules":             {},

	"envoy.config.rbac.v3.Principal.and_ids":          {},
	"envoy.config.rbac.v3.Principal.or_ids":           {},
	"envoy.config.rbac.v3.Principal.any":              {},
	"envoy.config.rbac.v3.Principal.authenticated":    {},
	"envoy.config.rbac.v3.Principal.source_ip":        {},
	"envoy.config.rbac.v3.Principal.direct_remote_ip": {},
	"envoy.config.rbac.v3.Principal.remote_ip":        {},
	"envoy.config.rbac.v3.Principal.header":           {},
	"envoy.config.rbac.v3.Principal.url_path":         {},
	"envoy.config.rbac.v3.Principal.metadata":         {},
	"envoy.config.rbac.v3.Principal.not_id":           {},
	"envoy.config.rbac.v3.Principal.sourced_metadata": {},
	"envoy.config.rbac.v3.Principal.custom":           {},
	"envoy.config.rbac.v3.Permission.matcher":         {},

	"envoy.extensions.rbac.matchers.upstream_ip_port.v3.UpstreamIpPortMatcher.upstream_ip":           {},
	"envoy.extensions.rbac.matchers.upstream_ip_port.v3.UpstreamIpPortMatcher.upstream_port_range":   {},
	"envoy.extensions.rbac.principals.mtls_authenticated.v3.Config.san_matcher":                      {},
	"envoy.extensions.rbac.principals.mtls_authenticated.v3.Config.any_validated_client_certificate": {},
	// A string_match on the object's PLAIN form (the HTTP filter only;
	// the network one refuses it).
	"envoy.config.rbac.v3.Principal.filter_state":                 {},
	"envoy.config.rbac.v3.SourcedMetadata.metadata_matcher":       {},
	"envoy.config.rbac.v3.SourcedMetadata.metadata_source":        {},
	"envoy.config.rbac.v3.Principal.Set.ids":                      {},
	"envoy.config.rbac.v3.Principal.Authenticated.principal_name": {},

	"envoy.type.matcher.v3.PathMatcher.path":       {},
	"envoy.type.matcher.v3.MetadataMatcher.invert": {},
	"envoy.type.v3.Int32Range.start":               {},
	"envoy.type.v3.Int32Range.end":                 {},
}
