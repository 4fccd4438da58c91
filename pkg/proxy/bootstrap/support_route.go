package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedRoute lists the route configuration fields Outrigger implements
// (see supportedCore); package router compiles them.
var supportedRoute = map[protoreflect.FullName]fieldSupport{
	// Route configuration.
	"envoy.config.route.v3.RouteConfiguration.name":                                {},
	"envoy.config.route.v3.RouteConfiguration.virtual_hosts":                       {},
	"envoy.config.route.v3.RouteConfiguration.request_headers_to_add":              {},
	"envoy.config.route.v3.RouteConfiguration.request_headers_to_remove":           {},
	"envoy.config.route.v3.RouteConfiguration.response_headers_to_add":             {},
	"envoy.config.route.v3.RouteConfiguration.response_headers_to_remove":          {},
	"envoy.config.route.v3.RouteConfiguration.most_specific_header_mutations_wins": {},
	"envoy.config.route.v3.RouteConfiguration.ignore_port_in_host_matching":        {},
	"envoy.config.route.v3.RouteConfiguration.max_direct_response_body_size_bytes": {},
	"envoy.config.route.v3.RouteConfiguration.validate_clusters":                   {},
	"envoy.config.route.v3.RouteConfiguration.typed_per_filter_config":             {perFilter: true},

	// Virtual hosts.
	"envoy.config.route.v3.VirtualHost.name":                       {},
	"envoy.config.route.v3.VirtualHost.domains":                    {},
	"envoy.config.route.v3.VirtualHost.routes":                     {},
	"envoy.config.route.v3.VirtualHost.request_headers_to_add":     {},
	"envoy.config.route.v3.VirtualHost.request_headers_to_remove":  {},
	"envoy.config.route.v3.VirtualHost.response_headers_to_add":    {},
	"envoy.config.route.v3.VirtualHost.response_headers_to_remove": {},
	"envoy.config.route.v3.VirtualHost.typed_per_filter_config":    {perFilter: true},
	"envoy.config.route.v3.VirtualHost.cors":                       {},
	"envoy.config.route.v3.VirtualHost.rate_limits":                {},

	// Routes.
	"envoy.config.route.v3.Route.name":                       {},
	"envoy.config.route.v3.Route.match":                      {},
	"envoy.config.route.v3.Route.route":                      {},
	"envoy.config.route.v3.Route.redirect":                   {},
	"envoy.config.route.v3.Route.direct_response":            {},
	"envoy.config.route.v3.Route.request_headers_to_add":     {},
	"envoy.config.route.v3.Route.request_headers_to_remove":  {},
	"envoy.config.route.v3.Route.response_headers_to_add":    {},
	"envoy.config.route.v3.Route.response_headers_to_remove": {},
	"envoy.config.route.v3.Route.typed_per_filter_config":    {perFilter: true},
	// Read by %METADATA(ROUTE:...)% and route metadata tags.
	"envoy.config.route.v3.Route.metadata": {},
	// Read by %METADATA(VIRTUAL_HOST:...)%.
	"envoy.config.route.v3.VirtualHost.metadata": {},

	// Route matching.
	"envoy.config.route.v3.RouteMatch.prefix":                           {},
	"envoy.config.route.v3.RouteMatch.path":                             {},
	"envoy.config.route.v3.RouteMatch.safe_regex":                       {},
	"envoy.config.route.v3.RouteMatch.path_separated_prefix":            {},
	"envoy.config.route.v3.RouteMatch.case_sensitive":                   {},
	"envoy.config.route.v3.RouteMatch.headers":                          {},
	"envoy.config.route.v3.RouteMatch.query_parameters":                 {},
	"envoy.config.route.v3.RouteMatch.grpc":                             {},
	"envoy.config.route.v3.HeaderMatcher.name":                          {},
	"envoy.config.route.v3.HeaderMatcher.exact_match":                   {},
	"envoy.config.route.v3.HeaderMatcher.safe_regex_match":              {},
	"envoy.config.route.v3.HeaderMatcher.range_match":                   {},
	"envoy.config.route.v3.HeaderMatcher.present_match":                 {},
	"envoy.config.route.v3.HeaderMatcher.prefix_match":                  {},
	"envoy.config.route.v3.HeaderMatcher.suffix_match":                  {},
	"envoy.config.route.v3.HeaderMatcher.contains_match":                {},
	"envoy.config.route.v3.HeaderMatcher.string_match":                  {},
	"envoy.config.route.v3.HeaderMatcher.invert_match":                  {},
	"envoy.config.route.v3.HeaderMatcher.treat_missing_header_as_empty": {},
	"envoy.config.route.v3.QueryParameterMatcher.name":                  {},
	"envoy.config.route.v3.QueryParameterMatcher.string_match":          {},
	"envoy.config.route.v3.QueryParameterMatcher.present_match":         {},
	"envoy.type.v3.Int64Range.start":                                    {},
	"envoy.type.v3.Int64Range.end":                                      {},
	"envoy.type.matcher.v3.StringMatcher.exact":                         {},
	"envoy.type.matcher.v3.StringMatcher.prefix":                        {},
	"envoy.type.matcher.v3.StringMatcher.suffix":                        {},
	"envoy.type.matcher.v3.StringMatcher.safe_regex":                    {},
	"envoy.type.matcher.v3.StringMatcher.contains":                      {},
	"envoy.type.matcher.v3.StringMatcher.ignore_case":                   {},
	"envoy.type.matcher.v3.RegexMatcher.regex":                          {},
	"envoy.type.matcher.v3.RegexMatchAndSubstitute.pattern":             {},
	"envoy.type.matcher.v3.RegexMatchAndSubstitute.substitution":        {},

	// Route actions.
	"envoy.config.route.v3.RouteAction.cluster":                                      {},
	"envoy.config.route.v3.RouteAction.weighted_clusters":                            {},
	"envoy.config.route.v3.RouteAction.cluster_header":                               {},
	"envoy.config.route.v3.RouteAction.cluster_not_found_response_code":              {},
	"envoy.config.route.v3.RouteAction.prefix_rewrite":                               {},
	"envoy.config.route.v3.RouteAction.regex_rewrite":                                {},
	"envoy.config.route.v3.RouteAction.host_rewrite_literal":                         {},
	"envoy.config.route.v3.RouteAction.timeout":                                      {},
	"envoy.config.route.v3.RouteAction.idle_timeout":                                 {},
	"envoy.config.route.v3.RouteAction.max_stream_duration":                          {},
	"envoy.config.route.v3.RouteAction.MaxStreamDuration.max_stream_duration":        {},
	"envoy.config.route.v3.RouteAction.MaxStreamDuration.grpc_timeout_header_max":    {},
	"envoy.config.route.v3.RouteAction.MaxStreamDuration.grpc_timeout_header_offset": {},
	// Deprecated, and ignored by a route with max_stream_duration.
	"envoy.config.route.v3.RouteAction.max_grpc_timeout":                          {},
	"envoy.config.route.v3.RouteAction.grpc_timeout_offset":                       {},
	"envoy.config.route.v3.WeightedCluster.clusters":                              {},
	"envoy.config.route.v3.WeightedCluster.total_weight":                          {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.name":                    {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.weight":                  {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.typed_per_filter_config": {perFilter: true},
	"envoy.config.route.v3.RouteAction.cors":                                      {},
	"envoy.config.route.v3.RouteAction.rate_limits":                               {},
	"envoy.config.route.v3.RouteAction.include_vh_rate_limits":                    {},

	// CORS policies of virtual hosts and routes (the CORS filter applies
	// them; see supportedHTTPFilters for their percentages).
	"envoy.config.route.v3.CorsPolicy.allow_origin_string_match":       {},
	"envoy.config.route.v3.CorsPolicy.allow_methods":                   {},
	"envoy.config.route.v3.CorsPolicy.allow_headers":                   {},
	"envoy.config.route.v3.CorsPolicy.expose_headers":                  {},
	"envoy.config.route.v3.CorsPolicy.max_age":                         {},
	"envoy.config.route.v3.CorsPolicy.allow_credentials":               {},
	"envoy.config.route.v3.CorsPolicy.filter_enabled":                  {},
	"envoy.config.route.v3.CorsPolicy.shadow_enabled":                  {},
	"envoy.config.route.v3.CorsPolicy.allow_private_network_access":    {},
	"envoy.config.route.v3.CorsPolicy.forward_not_matching_preflights": {},

	// Rate limit actions, read by the local rate limit filter. The
	// metadata, query parameter, masked address, source cluster and
	// extension actions, limit overrides and hits_addend are not
	// implemented.
	"envoy.config.route.v3.RateLimit.stage":                                    {},
	"envoy.config.route.v3.RateLimit.disable_key":                              {},
	"envoy.config.route.v3.RateLimit.actions":                                  {},
	"envoy.config.route.v3.RateLimit.Action.generic_key":                       {},
	"envoy.config.route.v3.RateLimit.Action.request_headers":                   {},
	"envoy.config.route.v3.RateLimit.Action.remote_address":                    {},
	"envoy.config.route.v3.RateLimit.Action.destination_cluster":               {},
	"envoy.config.route.v3.RateLimit.Action.header_value_match":                {},
	"envoy.config.route.v3.RateLimit.Action.GenericKey.descriptor_value":       {},
	"envoy.config.route.v3.RateLimit.Action.GenericKey.descriptor_key":         {},
	"envoy.config.route.v3.RateLimit.Action.RequestHeaders.header_name":        {},
	"envoy.config.route.v3.RateLimit.Action.RequestHeaders.descriptor_key":     {},
	"envoy.config.route.v3.RateLimit.Action.RequestHeaders.skip_if_absent":     {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.descriptor_value": {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.descriptor_key":   {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.expect_match":     {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.headers":          {},

	// Redirects and direct responses.
	"envoy.config.route.v3.RedirectAction.https_redirect":  {},
	"envoy.config.route.v3.RedirectAction.scheme_redirect": {},
	"envoy.config.route.v3.RedirectAction.host_redirect":   {},
	"envoy.config.route.v3.RedirectAction.port_redirect":   {},
	"envoy.config.route.v3.RedirectAction.path_redirect":   {},
	"envoy.config.route.v3.RedirectAction.prefix_rewrite":  {},
	"envoy.config.route.v3.RedirectAction.regex_rewrite":   {},
	"envoy.config.route.v3.RedirectAction.response_code":   {},
	"envoy.config.route.v3.RedirectAction.strip_query":     {},
	"envoy.config.route.v3.DirectResponseAction.status":    {},
	"envoy.config.route.v3.DirectResponseAction.body":      {},
	"envoy.config.core.v3.DataSource.inline_string":        {},
	"envoy.config.core.v3.DataSource.inline_bytes":         {},
	// Read where Outrigger reads files (direct response bodies); the other
	// users of DataSource refuse it with its path.
	"envoy.config.core.v3.DataSource.filename": {},

	// Retry policies of routes and virtual hosts (the route's replaces
	// its virtual host's). retry_priority and retry_options_predicates
	// are not implemented.
	"envoy.config.route.v3.RouteAction.retry_policy":                                          {},
	"envoy.config.route.v3.VirtualHost.retry_policy":                                          {},
	"envoy.config.route.v3.RetryPolicy.retry_on":                                              {},
	"envoy.config.route.v3.RetryPolicy.num_retries":                                           {},
	"envoy.config.route.v3.RetryPolicy.per_try_timeout":                                       {},
	"envoy.config.route.v3.RetryPolicy.per_try_idle_timeout":                                  {},
	"envoy.config.route.v3.RetryPolicy.retry_host_predicate":                                  {},
	"envoy.config.route.v3.RetryPolicy.host_selection_retry_max_attempts":                     {},
	"envoy.config.route.v3.RetryPolicy.retriable_status_codes":                                {},
	"envoy.config.route.v3.RetryPolicy.retry_back_off":                                        {},
	"envoy.config.route.v3.RetryPolicy.rate_limited_retry_back_off":                           {},
	"envoy.config.route.v3.RetryPolicy.retriable_headers":                                     {},
	"envoy.config.route.v3.RetryPolicy.retriable_request_headers":                             {},
	"envoy.config.route.v3.RetryPolicy.RetryHostPredicate.name":                               {},
	"envoy.config.route.v3.RetryPolicy.RetryHostPredicate.typed_config":                       {types: []protoreflect.FullName{"envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate", "envoy.extensions.retry.host.omit_canary_hosts.v3.OmitCanaryHostsPredicate", "envoy.extensions.retry.host.omit_host_metadata.v3.OmitHostMetadataConfig"}},
	"envoy.extensions.retry.host.omit_host_metadata.v3.OmitHostMetadataConfig.metadata_match": {},
	"envoy.config.route.v3.RetryPolicy.RetryBackOff.base_interval":                            {},
	"envoy.config.route.v3.RetryPolicy.RetryBackOff.max_interval":                             {},
	"envoy.config.route.v3.RetryPolicy.RateLimitedRetryBackOff.reset_headers":                 {},
	"envoy.config.route.v3.RetryPolicy.RateLimitedRetryBackOff.max_interval":                  {},
	"envoy.config.route.v3.RetryPolicy.ResetHeader.name":                                      {},
	"envoy.config.route.v3.RetryPolicy.ResetHeader.format":                                    {},

	// Host rewrites, the headers of internal requests, runtime shares
	// of routes (their RuntimeFractionalPercent is listed with the HTTP
	// filters'), attempt counts, and the router's virtual cluster and
	// route stats.
	"envoy.config.route.v3.RouteAction.auto_host_rewrite":                 {},
	"envoy.config.route.v3.RouteAction.host_rewrite_header":               {},
	"envoy.config.route.v3.RouteAction.host_rewrite_path_regex":           {},
	"envoy.config.route.v3.RouteAction.append_x_forwarded_host":           {},
	"envoy.config.route.v3.RouteConfiguration.internal_only_headers":      {},
	"envoy.config.route.v3.RouteMatch.runtime_fraction":                   {},
	"envoy.config.route.v3.VirtualHost.include_request_attempt_count":     {},
	"envoy.config.route.v3.VirtualHost.include_attempt_count_in_response": {},
	"envoy.config.route.v3.VirtualHost.virtual_clusters":                  {},
	"envoy.config.route.v3.VirtualCluster.name":                           {},
	"envoy.config.route.v3.VirtualCluster.headers":                        {},
	"envoy.config.route.v3.Route.stat_prefix":                             {},

	// Header mutations (values may use access-log % operators).
	"envoy.config.core.v3.HeaderValueOption.header":           {},
	"envoy.config.core.v3.HeaderValueOption.append":           {},
	"envoy.config.core.v3.HeaderValueOption.append_action":    {},
	"envoy.config.core.v3.HeaderValueOption.keep_empty_value": {},
	"envoy.config.core.v3.HeaderValue.key":                    {},
	"envoy.config.core.v3.HeaderValue.value":                  {},
}
