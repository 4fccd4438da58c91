package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedRoute lists the route configuration fields Outrigger implements
// (see supportedCore); package router compiles them.
var supportedRoute = map[protoreflect.FullName]fieldSupport{
	// Route configuration.
	"envoy.config.route.v3.RouteConfiguration.name":                                    {},
	"envoy.config.route.v3.RouteConfiguration.virtual_hosts":                           {},
	"envoy.config.route.v3.RouteConfiguration.request_headers_to_add":                  {},
	"envoy.config.route.v3.RouteConfiguration.request_headers_to_remove":               {},
	"envoy.config.route.v3.RouteConfiguration.response_headers_to_add":                 {},
	"envoy.config.route.v3.RouteConfiguration.response_headers_to_remove":              {},
	"envoy.config.route.v3.RouteConfiguration.most_specific_header_mutations_wins":     {},
	"envoy.config.route.v3.RouteConfiguration.ignore_port_in_host_matching":            {},
	"envoy.config.route.v3.RouteConfiguration.vhost_header":                            {},
	"envoy.config.route.v3.RouteConfiguration.ignore_path_parameters_in_path_matching": {},
	"envoy.config.route.v3.RouteConfiguration.max_direct_response_body_size_bytes":     {},
	"envoy.config.route.v3.RouteConfiguration.validate_clusters":                       {},
	"envoy.config.route.v3.RouteConfiguration.typed_per_filter_config":                 {perFilter: true},

	// Virtual hosts.
	"envoy.config.route.v3.VirtualHost.name":                       {},
	"envoy.config.route.v3.VirtualHost.domains":                    {},
	"envoy.config.route.v3.VirtualHost.routes":                     {},
	"envoy.config.route.v3.VirtualHost.require_tls":                {},
	"envoy.config.route.v3.VirtualHost.request_headers_to_add":     {},
	"envoy.config.route.v3.VirtualHost.request_headers_to_remove":  {},
	"envoy.config.route.v3.VirtualHost.response_headers_to_add":    {},
	"envoy.config.route.v3.VirtualHost.response_headers_to_remove": {},
	"envoy.config.route.v3.VirtualHost.typed_per_filter_config":    {perFilter: true},
	"envoy.config.route.v3.VirtualHost.cors":                       {},
	"envoy.config.route.v3.VirtualHost.rate_limits":                {},
	// The body kept for retries and shadowing (router/bufferlimit.go).
	"envoy.config.route.v3.VirtualHost.per_request_buffer_limit_bytes": {},
	"envoy.config.route.v3.VirtualHost.request_body_buffer_limit":      {},
	"envoy.config.route.v3.Route.per_request_buffer_limit_bytes":       {},
	"envoy.config.route.v3.Route.request_body_buffer_limit":            {},

	// Routes.
	"envoy.config.route.v3.Route.name":            {},
	"envoy.config.route.v3.Route.match":           {},
	"envoy.config.route.v3.Route.route":           {},
	"envoy.config.route.v3.Route.redirect":        {},
	"envoy.config.route.v3.Route.direct_response": {},
	// For filters that answer themselves; the router finds no cluster.
	"envoy.config.route.v3.Route.non_forwarding_action":      {},
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
	"envoy.config.route.v3.RouteMatch.prefix":                {},
	"envoy.config.route.v3.RouteMatch.path":                  {},
	"envoy.config.route.v3.RouteMatch.safe_regex":            {},
	"envoy.config.route.v3.RouteMatch.path_separated_prefix": {},
	// path_match_policy and path_rewrite_policy take the uri_template
	// extensions (router/uritemplate.go).
	"envoy.config.route.v3.RouteMatch.path_match_policy":    {},
	"envoy.config.route.v3.RouteAction.path_rewrite_policy": {},
	// Format strings (router/pathformat.go).
	"envoy.config.route.v3.RouteAction.path_rewrite":                                               {},
	"envoy.config.route.v3.RouteAction.host_rewrite":                                               {},
	"envoy.config.route.v3.RedirectAction.path_rewrite":                                            {},
	"envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig.path_template":             {},
	"envoy.extensions.path.rewrite.uri_template.v3.UriTemplateRewriteConfig.path_template_rewrite": {},
	"envoy.config.route.v3.RouteMatch.case_sensitive":                                              {},
	"envoy.config.route.v3.RouteMatch.headers":                                                     {},
	"envoy.config.route.v3.RouteMatch.query_parameters":                                            {},
	"envoy.config.route.v3.RouteMatch.dynamic_metadata":                                            {},
	"envoy.config.route.v3.RouteMatch.filter_state":                                                {},
	// A filter state object's string form, or an address object's IP.
	"envoy.type.matcher.v3.FilterStateMatcher.key":                      {},
	"envoy.type.matcher.v3.FilterStateMatcher.string_match":             {},
	"envoy.type.matcher.v3.FilterStateMatcher.address_match":            {},
	"envoy.config.route.v3.RouteMatch.cookies":                          {},
	"envoy.config.route.v3.CookieMatcher.name":                          {},
	"envoy.config.route.v3.CookieMatcher.string_match":                  {},
	"envoy.config.route.v3.CookieMatcher.invert_match":                  {},
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
	// The deprecated engine marker ({}), which every regex here uses:
	// accepted with its deprecation warning; its max_program_size is
	// refused (Go's RE2 does not measure programs as the C++ RE2 does).
	"envoy.type.matcher.v3.RegexMatcher.google_re2":              {},
	"envoy.type.matcher.v3.RegexMatchAndSubstitute.pattern":      {},
	"envoy.type.matcher.v3.RegexMatchAndSubstitute.substitution": {},

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
	"envoy.config.route.v3.WeightedCluster.header_name":                           {},
	"envoy.config.route.v3.WeightedCluster.use_hash_policy":                       {},
	"envoy.config.route.v3.WeightedCluster.runtime_key_prefix":                    {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.name":                    {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.weight":                  {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.typed_per_filter_config": {perFilter: true},
	// The chosen cluster's own edits, applied before the route's
	// (router/weighted_headers.go).
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.request_headers_to_add":     {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.request_headers_to_remove":  {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.response_headers_to_add":    {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.response_headers_to_remove": {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.host_rewrite_literal":       {},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight.cluster_header":             {},
	"envoy.config.route.v3.RouteAction.cors":                                         {},
	"envoy.config.route.v3.RouteAction.rate_limits":                                  {},
	"envoy.config.route.v3.RouteAction.include_vh_rate_limits":                       {},

	// Hash policies (pkg/proxy/router, hashpolicy.go), which ring hash
	// and maglev clusters route on.
	"envoy.config.route.v3.RouteAction.hash_policy":                               {},
	"envoy.config.route.v3.RouteAction.HashPolicy.header":                         {},
	"envoy.config.route.v3.RouteAction.HashPolicy.cookie":                         {},
	"envoy.config.route.v3.RouteAction.HashPolicy.connection_properties":          {},
	"envoy.config.route.v3.RouteAction.HashPolicy.query_parameter":                {},
	"envoy.config.route.v3.RouteAction.HashPolicy.filter_state":                   {},
	"envoy.config.route.v3.RouteAction.HashPolicy.terminal":                       {},
	"envoy.config.route.v3.RouteAction.HashPolicy.Header.header_name":             {},
	"envoy.config.route.v3.RouteAction.HashPolicy.Header.regex_rewrite":           {},
	"envoy.config.route.v3.RouteAction.HashPolicy.Cookie.name":                    {},
	"envoy.config.route.v3.RouteAction.HashPolicy.Cookie.ttl":                     {},
	"envoy.config.route.v3.RouteAction.HashPolicy.Cookie.path":                    {},
	"envoy.config.route.v3.RouteAction.HashPolicy.Cookie.attributes":              {},
	"envoy.config.route.v3.RouteAction.HashPolicy.CookieAttribute.name":           {},
	"envoy.config.route.v3.RouteAction.HashPolicy.CookieAttribute.value":          {},
	"envoy.config.route.v3.RouteAction.HashPolicy.ConnectionProperties.source_ip": {},
	"envoy.config.route.v3.RouteAction.HashPolicy.QueryParameter.name":            {},
	"envoy.config.route.v3.RouteAction.HashPolicy.FilterState.key":                {},

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

	// Rate limit actions, read by the local and global rate limit
	// filters. apply_on_stream_done is refused (by the filters'
	// compilers) in the global and local filters' own rate_limits.
	"envoy.config.route.v3.RateLimit.hits_addend":                                   {},
	"envoy.config.route.v3.RateLimit.apply_on_stream_done":                          {},
	"envoy.config.route.v3.RateLimit.x_ratelimit_option":                            {},
	"envoy.config.route.v3.RateLimit.HitsAddend.number":                             {},
	"envoy.config.route.v3.RateLimit.HitsAddend.format":                             {},
	"envoy.config.route.v3.RateLimit.HitsAddend.is_negative_hits":                   {},
	"envoy.config.route.v3.RateLimit.stage":                                         {},
	"envoy.config.route.v3.RateLimit.disable_key":                                   {},
	"envoy.config.route.v3.RateLimit.actions":                                       {},
	"envoy.config.route.v3.RateLimit.Action.generic_key":                            {},
	"envoy.config.route.v3.RateLimit.Action.request_headers":                        {},
	"envoy.config.route.v3.RateLimit.Action.remote_address":                         {},
	"envoy.config.route.v3.RateLimit.Action.destination_cluster":                    {},
	"envoy.config.route.v3.RateLimit.Action.header_value_match":                     {},
	"envoy.config.route.v3.RateLimit.Action.GenericKey.descriptor_value":            {},
	"envoy.config.route.v3.RateLimit.Action.GenericKey.descriptor_key":              {},
	"envoy.config.route.v3.RateLimit.Action.GenericKey.default_value":               {},
	"envoy.config.route.v3.RateLimit.Action.RequestHeaders.header_name":             {},
	"envoy.config.route.v3.RateLimit.Action.RequestHeaders.descriptor_key":          {},
	"envoy.config.route.v3.RateLimit.Action.RequestHeaders.skip_if_absent":          {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.descriptor_value":      {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.descriptor_key":        {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.default_value":         {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.expect_match":          {},
	"envoy.config.route.v3.RateLimit.Action.HeaderValueMatch.headers":               {},
	"envoy.config.route.v3.RateLimit.Action.source_cluster":                         {},
	"envoy.config.route.v3.RateLimit.Action.masked_remote_address":                  {},
	"envoy.config.route.v3.RateLimit.Action.MaskedRemoteAddress.v4_prefix_mask_len": {},
	"envoy.config.route.v3.RateLimit.Action.MaskedRemoteAddress.v6_prefix_mask_len": {},
	"envoy.config.route.v3.RateLimit.Action.metadata":                               {},
	"envoy.config.route.v3.RateLimit.Action.MetaData.descriptor_key":                {},
	"envoy.config.route.v3.RateLimit.Action.MetaData.metadata_key":                  {},
	"envoy.config.route.v3.RateLimit.Action.MetaData.default_value":                 {},
	"envoy.config.route.v3.RateLimit.Action.MetaData.source":                        {},
	"envoy.config.route.v3.RateLimit.Action.MetaData.skip_if_absent":                {},
	"envoy.config.route.v3.RateLimit.Action.dynamic_metadata":                       {},
	"envoy.config.route.v3.RateLimit.Action.DynamicMetaData.descriptor_key":         {},
	"envoy.config.route.v3.RateLimit.Action.DynamicMetaData.metadata_key":           {},
	"envoy.config.route.v3.RateLimit.Action.DynamicMetaData.default_value":          {},

	// The query parameter actions read the percent-decoded query.
	"envoy.config.route.v3.RateLimit.Action.query_parameters":                          {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameters.query_parameter_name":      {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameters.descriptor_key":            {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameters.skip_if_absent":            {},
	"envoy.config.route.v3.RateLimit.Action.query_parameter_value_match":               {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameterValueMatch.descriptor_value": {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameterValueMatch.descriptor_key":   {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameterValueMatch.default_value":    {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameterValueMatch.expect_match":     {},
	"envoy.config.route.v3.RateLimit.Action.QueryParameterValueMatch.query_parameters": {},
	// remote_address_match's descriptor_value is a format (and so are
	// generic_key's, header_value_match's and query_parameter_value_match's
	// with Envoy's runtime feature).
	// The extension action takes the CEL descriptor (package cel).
	"envoy.config.route.v3.RateLimit.Action.extension":                           {},
	"envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor.descriptor_key":  {},
	"envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor.skip_if_error":   {},
	"envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor.text":            {},
	"envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor.parsed":          {},
	"envoy.config.route.v3.RateLimit.Action.remote_address_match":                {},
	"envoy.config.route.v3.RateLimit.Action.RemoteAddressMatch.descriptor_value": {},
	"envoy.config.route.v3.RateLimit.Action.RemoteAddressMatch.descriptor_key":   {},
	"envoy.config.route.v3.RateLimit.Action.RemoteAddressMatch.default_value":    {},
	"envoy.config.route.v3.RateLimit.Action.RemoteAddressMatch.address_matcher":  {},
	"envoy.type.matcher.v3.AddressMatcher.ranges":                                {},
	"envoy.type.matcher.v3.AddressMatcher.invert_match":                          {},
	"xds.core.v3.CidrRange.address_prefix":                                       {},
	"xds.core.v3.CidrRange.prefix_len":                                           {},

	// limit is sent to the rate limit service; the local rate limit
	// filter has no use for it, as in Envoy.
	"envoy.config.route.v3.RateLimit.limit":                                        {},
	"envoy.config.route.v3.RateLimit.Override.dynamic_metadata":                    {},
	"envoy.config.route.v3.RateLimit.Override.rate_limit":                          {},
	"envoy.config.route.v3.RateLimit.Override.DynamicMetadata.metadata_key":        {},
	"envoy.config.route.v3.RateLimit.Override.RateLimitOverride.requests_per_unit": {},
	"envoy.config.route.v3.RateLimit.Override.RateLimitOverride.unit":              {},

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
	// A SubstitutionFormatString, as local replies' (router/action.go).
	"envoy.config.route.v3.DirectResponseAction.body_format": {},
	"envoy.config.core.v3.DataSource.inline_string":          {},
	"envoy.config.core.v3.DataSource.inline_bytes":           {},
	// Read where Outrigger reads files (direct response bodies, TLS,
	// scripts, the filters that take one); the users of DataSource that
	// take inline data only (access log formats, local reply bodies)
	// refuse the others with their path. An environment variable is read
	// once, when the configuration loads, and must be set.
	"envoy.config.core.v3.DataSource.filename":             {},
	"envoy.config.core.v3.DataSource.environment_variable": {},

	// Retry policies of routes and virtual hosts (the route's replaces
	// its virtual host's), with the previous_priorities retry priority.
	// retry_options_predicates are not implemented.
	"envoy.config.route.v3.RouteAction.retry_policy": {},
	"envoy.config.route.v3.VirtualHost.retry_policy": {},
	// hedge_policy: hedge_on_per_try_timeout; initial_requests and
	// additional_request_chance are refused, as Envoy does not implement
	// them either (support_envoy_unimplemented.go).
	"envoy.config.route.v3.RouteAction.hedge_policy":             {},
	"envoy.config.route.v3.VirtualHost.hedge_policy":             {},
	"envoy.config.route.v3.HedgePolicy.hedge_on_per_try_timeout": {},
	// Hidden as not implemented in Envoy: their defaults only (router/hedge.go).
	"envoy.config.route.v3.HedgePolicy.initial_requests":                  {},
	"envoy.config.route.v3.HedgePolicy.additional_request_chance":         {},
	"envoy.config.route.v3.RetryPolicy.retry_on":                          {},
	"envoy.config.route.v3.RetryPolicy.num_retries":                       {},
	"envoy.config.route.v3.RetryPolicy.per_try_timeout":                   {},
	"envoy.config.route.v3.RetryPolicy.per_try_idle_timeout":              {},
	"envoy.config.route.v3.RetryPolicy.retry_host_predicate":              {},
	"envoy.config.route.v3.RetryPolicy.host_selection_retry_max_attempts": {},
	"envoy.config.route.v3.RetryPolicy.retriable_status_codes":            {},
	"envoy.config.route.v3.RetryPolicy.retry_back_off":                    {},
	// Envoy refreshes only the clusters of the matcher, priority group
	// and dynamic module cluster specifiers, which Outrigger does not
	// have: for the others (cluster, weighted_clusters, cluster_header,
	// Lua) a retry keeps its cluster in Envoy too.
	"envoy.config.route.v3.RetryPolicy.refresh_cluster_on_retry":                                       {},
	"envoy.config.route.v3.RetryPolicy.rate_limited_retry_back_off":                                    {},
	"envoy.config.route.v3.RetryPolicy.retriable_headers":                                              {},
	"envoy.config.route.v3.RetryPolicy.retriable_request_headers":                                      {},
	"envoy.config.route.v3.RetryPolicy.RetryHostPredicate.name":                                        {},
	"envoy.config.route.v3.RetryPolicy.RetryHostPredicate.typed_config":                                {types: []protoreflect.FullName{"envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate", "envoy.extensions.retry.host.omit_canary_hosts.v3.OmitCanaryHostsPredicate", "envoy.extensions.retry.host.omit_host_metadata.v3.OmitHostMetadataConfig"}},
	"envoy.extensions.retry.host.omit_host_metadata.v3.OmitHostMetadataConfig.metadata_match":          {},
	"envoy.config.route.v3.RetryPolicy.retry_priority":                                                 {},
	"envoy.config.route.v3.RetryPolicy.RetryPriority.name":                                             {},
	"envoy.config.route.v3.RetryPolicy.RetryPriority.typed_config":                                     {types: []protoreflect.FullName{"envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig"}},
	"envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig.update_frequency": {},
	"envoy.config.route.v3.RetryPolicy.RetryBackOff.base_interval":                                     {},
	"envoy.config.route.v3.RetryPolicy.RetryBackOff.max_interval":                                      {},
	"envoy.config.route.v3.RetryPolicy.RateLimitedRetryBackOff.reset_headers":                          {},
	"envoy.config.route.v3.RetryPolicy.RateLimitedRetryBackOff.max_interval":                           {},
	"envoy.config.route.v3.RetryPolicy.ResetHeader.name":                                               {},
	"envoy.config.route.v3.RetryPolicy.ResetHeader.format":                                             {},

	// Host rewrites, the headers of internal requests, runtime shares
	// of routes (their RuntimeFractionalPercent is listed with the HTTP
	// filters'), attempt counts, and the router's virtual cluster and
	// route stats.
	"envoy.config.route.v3.RouteAction.auto_host_rewrite": {},
	// priority: HIGH routes count against the cluster's HIGH circuit
	// breakers (pkg/proxy/cluster, breakersFor).
	"envoy.config.route.v3.RouteAction.priority":                          {},
	"envoy.config.route.v3.RouteAction.host_rewrite_header":               {},
	"envoy.config.route.v3.RouteAction.host_rewrite_path_regex":           {},
	"envoy.config.route.v3.RouteAction.append_x_forwarded_host":           {},
	"envoy.config.route.v3.RouteConfiguration.internal_only_headers":      {},
	"envoy.config.route.v3.RouteMatch.runtime_fraction":                   {},
	"envoy.config.route.v3.VirtualHost.include_request_attempt_count":     {},
	"envoy.config.route.v3.VirtualHost.include_attempt_count_in_response": {},
	"envoy.config.route.v3.VirtualHost.include_is_timeout_retry_header":   {},
	"envoy.config.route.v3.VirtualHost.virtual_clusters":                  {},
	"envoy.config.route.v3.VirtualCluster.name":                           {},
	"envoy.config.route.v3.VirtualCluster.headers":                        {},
	"envoy.config.route.v3.Route.stat_prefix":                             {},

	// Request mirroring (shadowing) at every level, with the shadows'
	// header mutations.
	"envoy.config.route.v3.RouteAction.request_mirror_policies":                               {},
	"envoy.config.route.v3.VirtualHost.request_mirror_policies":                               {},
	"envoy.config.route.v3.RouteConfiguration.request_mirror_policies":                        {},
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.cluster":                           {},
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.cluster_header":                    {},
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.runtime_fraction":                  {},
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.disable_shadow_host_suffix_append": {},
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.host_rewrite_literal":              {},
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.request_headers_mutations":         {},
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.trace_sampled":                     {},
	"envoy.config.common.mutation_rules.v3.HeaderMutation.remove":                             {},
	"envoy.config.common.mutation_rules.v3.HeaderMutation.append":                             {},
	"envoy.config.common.mutation_rules.v3.HeaderMutation.remove_on_match":                    {},
	"envoy.config.common.mutation_rules.v3.HeaderMutation.RemoveOnMatch.key_matcher":          {},

	// Header mutations (values may use access-log % operators).
	"envoy.config.core.v3.HeaderValueOption.header":           {},
	"envoy.config.core.v3.HeaderValueOption.append":           {},
	"envoy.config.core.v3.HeaderValueOption.append_action":    {},
	"envoy.config.core.v3.HeaderValueOption.keep_empty_value": {},
	"envoy.config.core.v3.HeaderValue.key":                    {},
	"envoy.config.core.v3.HeaderValue.value":                  {},
	// The bytes form, wherever a HeaderValue is read from the
	// configuration (router.HeaderValueText).
	"envoy.config.core.v3.HeaderValue.raw_value": {},
	// Only the default policy is registered (upstreams get no early
	// data, builtin.go).
	"envoy.config.route.v3.RouteAction.early_data_policy": {},
}
