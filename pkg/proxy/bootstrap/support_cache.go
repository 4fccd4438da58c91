package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedCache lists the fields of the HTTP cache filter
// (envoy.filters.http.cache) and its simple in-memory storage, which has
// none. Storages other than the simple one are refused by their type.
var supportedCache = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.cache.v3.CacheConfig.typed_config":                               {category: "envoy.http.cache"},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.disabled":                                   {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.allowed_vary_headers":                       {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.key_creator_params":                         {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.max_body_bytes":                             {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.ignore_request_cache_control_header":        {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.KeyCreatorParams.exclude_scheme":            {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.KeyCreatorParams.exclude_host":              {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.KeyCreatorParams.query_parameters_included": {},
	"envoy.extensions.filters.http.cache.v3.CacheConfig.KeyCreatorParams.query_parameters_excluded": {},
}
