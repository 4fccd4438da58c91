package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedLua lists the fields of envoy.filters.http.lua that Outrigger
// implements. package_cpaths (C modules) is refused.
var supportedLua = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.lua.v3.Lua.inline_code":         {},
	"envoy.extensions.filters.http.lua.v3.Lua.source_codes":        {},
	"envoy.extensions.filters.http.lua.v3.Lua.default_source_code": {},
	"envoy.extensions.filters.http.lua.v3.Lua.stat_prefix":         {},
	"envoy.extensions.filters.http.lua.v3.Lua.clear_route_cache":   {},
	"envoy.extensions.filters.http.lua.v3.Lua.filter_context":      {},
	"envoy.extensions.filters.http.lua.v3.Lua.package_paths":       {},
	"envoy.extensions.filters.http.lua.v3.Lua.shared_vm_id":        {},

	"envoy.extensions.filters.http.lua.v3.LuaPerRoute.disabled":       {},
	"envoy.extensions.filters.http.lua.v3.LuaPerRoute.name":           {},
	"envoy.extensions.filters.http.lua.v3.LuaPerRoute.source_code":    {},
	"envoy.extensions.filters.http.lua.v3.LuaPerRoute.filter_context": {},
	"envoy.extensions.filters.http.lua.v3.LuaPerRoute.package_paths":  {},
	"envoy.extensions.filters.http.lua.v3.LuaPerRoute.shared_vm_id":   {},
}

// supportedStringMatcherLua lists the fields of the Lua string matcher
// (envoy.string_matcher.lua), the one extension a StringMatcher's custom
// takes (router/stringmatch.go); its typed_config type is allowed in
// xds.core.v3.TypedExtensionConfig.typed_config (support_filters_tail.go).
var supportedStringMatcherLua = map[protoreflect.FullName]fieldSupport{
	"envoy.type.matcher.v3.StringMatcher.custom":             {},
	"xds.type.matcher.v3.StringMatcher.custom":               {},
	"envoy.extensions.string_matcher.lua.v3.Lua.source_code": {},
}
