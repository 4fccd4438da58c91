package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedHTTPFilters lists the fields of the HTTP filters' own
// configurations that Outrigger implements (see supportedCore), one
// filter after the other; route-level fields they read (CorsPolicy,
// rate_limits, typed_per_filter_config) are in supportedRoute. The
// health_check filter's are with the connection manager's.
var supportedHTTPFilters = map[protoreflect.FullName]fieldSupport{
	// Percentages with a runtime key (FractionalPercent itself is listed
	// with the access logs', which use it too).
	"envoy.config.core.v3.RuntimeFractionalPercent.default_value": {},
	"envoy.config.core.v3.RuntimeFractionalPercent.runtime_key":   {},

	// envoy.filters.http.cors: its Cors message has no field; the
	// per-route CorsPolicy (typed_per_filter_config) has these.
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.allow_origin_string_match":       {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.allow_methods":                   {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.allow_headers":                   {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.expose_headers":                  {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.max_age":                         {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.allow_credentials":               {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.filter_enabled":                  {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.shadow_enabled":                  {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.allow_private_network_access":    {},
	"envoy.extensions.filters.http.cors.v3.CorsPolicy.forward_not_matching_preflights": {},

	// envoy.filters.http.fault.
	"envoy.extensions.filters.http.fault.v3.HTTPFault.delay":                               {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.abort":                               {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.upstream_cluster":                    {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.headers":                             {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.downstream_nodes":                    {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.max_active_faults":                   {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.delay_percent_runtime":               {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.abort_percent_runtime":               {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.delay_duration_runtime":              {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.abort_http_status_runtime":           {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.max_active_faults_runtime":           {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.abort_grpc_status_runtime":           {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.disable_downstream_cluster_stats":    {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.response_rate_limit":                 {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.response_rate_limit_percent_runtime": {},
	"envoy.extensions.filters.http.fault.v3.HTTPFault.filter_metadata":                     {},
	"envoy.extensions.filters.http.fault.v3.FaultAbort.http_status":                        {},
	"envoy.extensions.filters.http.fault.v3.FaultAbort.grpc_status":                        {},
	"envoy.extensions.filters.http.fault.v3.FaultAbort.header_abort":                       {},
	"envoy.extensions.filters.http.fault.v3.FaultAbort.percentage":                         {},
	"envoy.extensions.filters.http.fault.v3.FaultAbort.response_body":                      {},
	"envoy.extensions.filters.common.fault.v3.FaultDelay.fixed_delay":                      {},
	"envoy.extensions.filters.common.fault.v3.FaultDelay.header_delay":                     {},
	"envoy.extensions.filters.common.fault.v3.FaultDelay.percentage":                       {},
	"envoy.extensions.filters.common.fault.v3.FaultRateLimit.fixed_limit":                  {},
	"envoy.extensions.filters.common.fault.v3.FaultRateLimit.header_limit":                 {},
	"envoy.extensions.filters.common.fault.v3.FaultRateLimit.percentage":                   {},
	"envoy.extensions.filters.common.fault.v3.FaultRateLimit.FixedLimit.limit_kbps":        {},

	// envoy.filters.http.local_ratelimit.
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.stat_prefix":                                {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.status":                                     {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.token_bucket":                               {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.filter_enabled":                             {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.filter_enforced":                            {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.request_headers_to_add_when_not_enforced":   {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.response_headers_to_add":                    {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.descriptors":                                {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.stage":                                      {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.local_rate_limit_per_downstream_connection": {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.enable_x_ratelimit_headers":                 {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.vh_rate_limits":                             {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.always_consume_default_token_bucket":        {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.rate_limited_as_resource_exhausted":         {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.rate_limits":                                {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.local_cluster_rate_limit":                   {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.max_dynamic_descriptors":                    {},
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.enable_retry_after_header":                  {},
	"envoy.type.v3.HttpStatus.code":                                              {},
	"envoy.type.v3.TokenBucket.max_tokens":                                       {},
	"envoy.type.v3.TokenBucket.tokens_per_fill":                                  {},
	"envoy.type.v3.TokenBucket.fill_interval":                                    {},
	"envoy.extensions.common.ratelimit.v3.LocalRateLimitDescriptor.entries":      {},
	"envoy.extensions.common.ratelimit.v3.LocalRateLimitDescriptor.token_bucket": {},
	"envoy.extensions.common.ratelimit.v3.LocalRateLimitDescriptor.shadow_mode":  {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry.key":         {},
	"envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry.value":       {},
	// The router (pkg/proxy/filters/http/router): start_child_span is
	// listed with tracing.
	"envoy.extensions.filters.http.router.v3.Router.suppress_envoy_headers": {},
	"envoy.extensions.filters.http.router.v3.Router.dynamic_stats":          {},
	// upstream_http_filters: the upstream chain (httpfilter.CompileUpstream
	// checks its filters).
	"envoy.extensions.filters.http.router.v3.Router.upstream_http_filters": {},
	// Request checks, timing and code stats (httpconn/router_options.go).
	"envoy.extensions.filters.http.router.v3.Router.strict_check_headers":                     {},
	"envoy.extensions.filters.http.router.v3.Router.respect_expected_rq_timeout":              {},
	"envoy.extensions.filters.http.router.v3.Router.suppress_grpc_request_failure_code_stats": {},
	// CONNECT requests sent as TLS early data (0-RTT) get a 425 with it
	// set; Outrigger's TLS (Go's crypto/tls) accepts no early data, so no
	// request is one and either value behaves as Envoy's does.
	"envoy.extensions.filters.http.router.v3.Router.reject_connect_request_early_data": {},
}
