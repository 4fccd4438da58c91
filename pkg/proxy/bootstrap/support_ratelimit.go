package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedRateLimit lists the fields of the global rate limit filters,
// envoy.filters.http.ratelimit (and its RateLimitPerRoute) and
// envoy.filters.network.ratelimit, that Outrigger implements (see
// supportedCore); the route's rate_limits actions are in supportedRoute.
// The network filter's
// descriptors are sent as they are, limit override and hits included
// (Envoy's filter sends only their entries). override_option is
// DEFAULT only, as Envoy reads vh_rate_limits; transport_api_version is
// V3 only, as Envoy requires.
var supportedRateLimit = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.domain":                             {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.stage":                              {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.request_type":                       {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.timeout":                            {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.failure_mode_deny":                  {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.rate_limited_as_resource_exhausted": {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.rate_limit_service":                 {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.enable_x_ratelimit_headers":         {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.disable_x_envoy_ratelimited_header": {},
	// retry-after on 429s (retryafter.go).
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.enable_retry_after_header": {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.rate_limited_status":       {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.response_headers_to_add":   {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.status_on_error":           {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.stat_prefix":               {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.filter_enabled":            {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.filter_enforced":           {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.failure_mode_deny_percent": {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.rate_limits":               {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit.metadata_namespace":        {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute.vh_rate_limits":    {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute.override_option":   {values: []string{"DEFAULT"}},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute.rate_limits":       {},
	"envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute.domain":            {},

	"envoy.extensions.filters.network.ratelimit.v3.RateLimit.stat_prefix":                          {},
	"envoy.extensions.filters.network.ratelimit.v3.RateLimit.domain":                               {},
	"envoy.extensions.filters.network.ratelimit.v3.RateLimit.descriptors":                          {},
	"envoy.extensions.filters.network.ratelimit.v3.RateLimit.timeout":                              {},
	"envoy.extensions.filters.network.ratelimit.v3.RateLimit.failure_mode_deny":                    {},
	"envoy.extensions.filters.network.ratelimit.v3.RateLimit.rate_limit_service":                   {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.entries":                             {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.limit":                               {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.hits_addend":                         {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.is_negative_hits":                    {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride.requests_per_unit": {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride.unit":              {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride.unit_multiplier":   {},

	"envoy.config.ratelimit.v3.RateLimitServiceConfig.grpc_service":          {},
	"envoy.config.ratelimit.v3.RateLimitServiceConfig.transport_api_version": {values: []string{"V3"}},
}
