package bootstrap

import "testing"

// Cluster specifier plugins: the Lua plugin's fields are supported; an
// optional plugin Outrigger does not have is left out, as Envoy leaves it
// out; any other is refused by its path.
func TestValidateClusterSpecifierPlugins(t *testing.T) {
	const (
		luaURL = `type.googleapis.com/envoy.extensions.router.cluster_specifiers.lua.v3.LuaConfig`
		script = `{inline_string: "function envoy_on_route(h) return \"c\" end"}`
		lua    = `{name: envoy.router.cluster_specifier_plugin.lua, typed_config: {"@type": ` + luaURL + `, source_code: ` + script + `, default_cluster: c}}`
		other  = `{name: other, typed_config: {"@type": type.googleapis.com/google.protobuf.Struct, value: {}}}`
		plugin = extraHCM + ".route_config.cluster_specifier_plugins[0]"
		// Envoy's other plugin, which Outrigger does not have.
		celMatcher = `{name: m, typed_config: {"@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.MatcherClusterSpecifier, cluster_matcher: {matcher_list: {matchers: [` +
			`{predicate: {single_predicate: {input: {name: c, typed_config: {"@type": type.googleapis.com/xds.type.matcher.v3.HttpAttributesCelMatchInput}}, custom_match: {name: m, typed_config: {"@type": type.googleapis.com/xds.type.matcher.v3.CelMatcher, expr_match: {cel_expr_parsed: {expr: {id: 1, const_expr: {bool_value: true}}}}, description: d}}}}, on_match: {keep_matching: true, action: {name: c, typed_config: {"@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction, cluster: a}}}},` +
			`{predicate: {single_predicate: {input: {name: d, typed_config: {"@type": type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput, filter: f, path: [{key: k}]}}, custom_match: {name: m, typed_config: {"@type": type.googleapis.com/envoy.extensions.matching.input_matchers.metadata.v3.Metadata, value: {string_match: {exact: v}}, invert: true}}}}, on_match: {action: {name: c, typed_config: {"@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction, cluster: b}}}},` +
			`{predicate: {single_predicate: {input: {name: e, typed_config: {"@type": type.googleapis.com/envoy.extensions.matching.common_inputs.environment_variable.v3.Config, name: ZONE}}, value_match: {exact: z}}}, on_match: {action: {name: c, typed_config: {"@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction, cluster: c}}}}]}}}}`
		matcher = `{name: m, typed_config: {"@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.MatcherClusterSpecifier, cluster_matcher: {matcher_list: {matchers: [{predicate: {single_predicate: {input: {name: h, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x}}, value_match: {exact: a}}}, on_match: {action: {name: c, typed_config: {"@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction, cluster: a}}}}]}}}}`
	)
	hcm := func(rc string) string {
		return hcmYAML(`stat_prefix: extra, route_config: {` + rc + `}, http_filters: [` + routerFilter + `]`)
	}
	routes := func(action string) string {
		return `virtual_hosts: [{name: v, domains: [extra.example], routes: [{match: {prefix: /}, route: ` + action + `}]}]`
	}
	runValidateCases(t, map[string]validateCase{
		"inline Lua plugin": {
			overlay: hcm(routes(`{inline_cluster_specifier_plugin: {extension: ` + lua + `}}`)),
		},
		"named Lua plugin": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + lua + `}], ` + routes(`{cluster_specifier_plugin: envoy.router.cluster_specifier_plugin.lua}`)),
		},
		"optional unknown plugin": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + other + `, is_optional: true}], ` + routes(`{inline_cluster_specifier_plugin: {extension: `+other+`, is_optional: true}}`)),
		},
		"Envoy's matcher plugin": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + matcher + `}]`),
		},
		"matcher plugin on CEL, metadata and environment inputs, keep_matching": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + celMatcher + `}]`),
		},
		"Envoy's matcher plugin, optional": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + matcher + `, is_optional: true}], ` + routes(`{cluster_specifier_plugin: m}`)),
		},
		"unknown plugin": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + other + `}]`),
			want:    []string{plugin + `.extension.typed_config: extension "google.protobuf.Struct" is not supported by Outrigger; see docs/extensions.md`},
		},
		"disabled Lua plugin": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + lua + `}]`),
			disable: []string{"envoy.router.cluster_specifier_plugin/envoy.router.cluster_specifier_plugin.lua"},
			want:    []string{plugin + `.extension.typed_config: extension "proxy.router.cluster_specifier_plugin.lua" is disabled by --disable-extensions`},
		},
		"disabled optional Lua plugin": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + lua + `, is_optional: true}]`),
			disable: []string{"envoy.router.cluster_specifier_plugin/envoy.router.cluster_specifier_plugin.lua"},
		},
		"a plugin that is another category's": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: ` + routerFilter + `}]`),
			want:    []string{plugin + `.extension.typed_config: extension "proxy.filters.http.router" (category envoy.filters.http) cannot be used here: expected category envoy.router.cluster_specifier_plugin`},
		},
		"script from an environment variable": {
			overlay: hcm(`cluster_specifier_plugins: [{extension: {name: l, typed_config: {"@type": ` + luaURL + `, source_code: {environment_variable: SCRIPT}}}}]`),
		},
	})
}
