package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedFiltersTail lists the fields of the small HTTP and network
// filters of the long tail (header_mutation, set_metadata,
// header_to_metadata, buffer, csrf, basic_auth, cdn_loop, direct_response, echo), one filter
// after the other.
var supportedFiltersTail = map[protoreflect.FullName]fieldSupport{
	// envoy.filters.http.header_mutation (a KeyValueAppend's entry is
	// refused; header values may use % operators, those of the message's
	// formatter extensions included; remove_on_match is in the route
	// table's list).
	"envoy.extensions.filters.http.header_mutation.v3.HeaderMutation.mutations":                           {},
	"envoy.extensions.filters.http.header_mutation.v3.Mutations.query_parameter_mutations":                {},
	"envoy.extensions.filters.http.header_mutation.v3.Mutations.request_trailers_mutations":               {},
	"envoy.extensions.filters.http.header_mutation.v3.Mutations.response_trailers_mutations":              {},
	"envoy.config.core.v3.KeyValueMutation.append":                                                        {},
	"envoy.config.core.v3.KeyValueMutation.remove":                                                        {},
	"envoy.config.core.v3.KeyValueAppend.record":                                                          {},
	"envoy.config.core.v3.KeyValueAppend.action":                                                          {},
	"envoy.config.core.v3.KeyValuePair.key":                                                               {},
	"envoy.config.core.v3.KeyValuePair.value":                                                             {},
	"envoy.extensions.filters.http.header_mutation.v3.HeaderMutation.most_specific_header_mutations_wins": {},
	"envoy.extensions.filters.http.header_mutation.v3.HeaderMutationPerRoute.mutations":                   {},
	"envoy.extensions.filters.http.header_mutation.v3.Mutations.request_mutations":                        {},
	"envoy.extensions.filters.http.header_mutation.v3.Mutations.response_mutations":                       {},
	"envoy.extensions.filters.http.header_mutation.v3.Mutations.formatters":                               {},

	// envoy.filters.http.set_metadata.
	"envoy.extensions.filters.http.set_metadata.v3.Config.metadata_namespace":   {},
	"envoy.extensions.filters.http.set_metadata.v3.Config.value":                {},
	"envoy.extensions.filters.http.set_metadata.v3.Config.metadata":             {},
	"envoy.extensions.filters.http.set_metadata.v3.Metadata.metadata_namespace": {},
	"envoy.extensions.filters.http.set_metadata.v3.Metadata.allow_overwrite":    {},
	"envoy.extensions.filters.http.set_metadata.v3.Metadata.value":              {},
	// A value for the typed metadata, of any type.
	"envoy.extensions.filters.http.set_metadata.v3.Metadata.typed_value": {data: true},

	// envoy.filters.http.header_to_metadata (a cookie on response rules
	// is refused by the filter).
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.request_rules":  {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.stat_prefix":    {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.response_rules": {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.Rule.header":    {},
	// A request cookie's value instead of a header's (request rules only).
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.Rule.cookie":                      {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.Rule.on_header_present":           {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.Rule.on_header_missing":           {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.Rule.remove":                      {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair.metadata_namespace":  {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair.key":                 {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair.value":               {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair.regex_value_rewrite": {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair.type":                {},
	"envoy.extensions.filters.http.header_to_metadata.v3.Config.KeyValuePair.encode":              {},

	// envoy.filters.http.buffer.
	"envoy.extensions.filters.http.buffer.v3.Buffer.max_request_bytes": {},
	"envoy.extensions.filters.http.buffer.v3.BufferPerRoute.disabled":  {},
	"envoy.extensions.filters.http.buffer.v3.BufferPerRoute.buffer":    {},

	// envoy.filters.http.csrf.
	"envoy.extensions.filters.http.csrf.v3.CsrfPolicy.filter_enabled":     {},
	"envoy.extensions.filters.http.csrf.v3.CsrfPolicy.shadow_enabled":     {},
	"envoy.extensions.filters.http.csrf.v3.CsrfPolicy.additional_origins": {},

	// envoy.filters.http.grpc_http1_bridge.
	"envoy.extensions.filters.http.grpc_http1_bridge.v3.Config.upgrade_protobuf_to_grpc": {},
	"envoy.extensions.filters.http.grpc_http1_bridge.v3.Config.ignore_query_parameters":  {},

	// envoy.filters.http.basic_auth.
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth.users":                   {},
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth.forward_username_header": {},
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth.authentication_header":   {},
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth.allow_missing":           {},
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth.emit_dynamic_metadata":   {},
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth.realm":                   {},
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuthPerRoute.users":           {},
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuthPerRoute.realm":           {},

	// envoy.filters.http.cdn_loop.
	"envoy.extensions.filters.http.cdn_loop.v3.CdnLoopConfig.cdn_id":                  {},
	"envoy.extensions.filters.http.cdn_loop.v3.CdnLoopConfig.max_allowed_occurrences": {},

	// envoy.filters.http.grpc_stats (emit_filter_state: for
	// %FILTER_STATE(envoy.filters.http.grpc_stats)%).
	"envoy.extensions.filters.http.grpc_stats.v3.FilterConfig.emit_filter_state":                 {},
	"envoy.extensions.filters.http.grpc_stats.v3.FilterConfig.individual_method_stats_allowlist": {},
	"envoy.extensions.filters.http.grpc_stats.v3.FilterConfig.stats_for_all_methods":             {},
	"envoy.extensions.filters.http.grpc_stats.v3.FilterConfig.enable_upstream_stats":             {},
	"envoy.extensions.filters.http.grpc_stats.v3.FilterConfig.replace_dots_in_grpc_service_name": {},
	"envoy.config.core.v3.GrpcMethodList.services":                                               {},
	"envoy.config.core.v3.GrpcMethodList.Service.name":                                           {},
	"envoy.config.core.v3.GrpcMethodList.Service.method_names":                                   {},

	// envoy.filters.http.custom_response: its matcher (the xDS unified
	// matcher, with Envoy's HTTP inputs) and the local_response_policy
	// (the redirect_policy's fields are in
	// support_custom_response_policy.go; keep_matching and custom
	// matches are refused).
	"envoy.extensions.filters.http.custom_response.v3.CustomResponse.custom_response_matcher": {},
	"xds.type.matcher.v3.Matcher.matcher_list":                                                {},
	"xds.type.matcher.v3.Matcher.matcher_tree":                                                {},
	"xds.type.matcher.v3.Matcher.on_no_match":                                                 {},
	"xds.type.matcher.v3.Matcher.OnMatch.matcher":                                             {},
	"xds.type.matcher.v3.Matcher.OnMatch.action":                                              {},
	"xds.type.matcher.v3.Matcher.MatcherList.matchers":                                        {},
	"xds.type.matcher.v3.Matcher.MatcherList.FieldMatcher.predicate":                          {},
	"xds.type.matcher.v3.Matcher.MatcherList.FieldMatcher.on_match":                           {},
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.single_predicate":                      {},
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.or_matcher":                            {},
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.and_matcher":                           {},
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.not_matcher":                           {},
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.SinglePredicate.input":                 {},
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.SinglePredicate.value_match":           {},
	// A single_predicate's custom_match: Envoy's input matchers (package
	// httpmatch, inputmatcher.go).
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.SinglePredicate.custom_match":                {},
	"envoy.extensions.matching.input_matchers.ip.v3.Ip.cidr_ranges":                                 {},
	"envoy.extensions.matching.input_matchers.ip.v3.Ip.stat_prefix":                                 {},
	"envoy.extensions.matching.input_matchers.consistent_hashing.v3.ConsistentHashing.threshold":    {},
	"envoy.extensions.matching.input_matchers.consistent_hashing.v3.ConsistentHashing.modulo":       {},
	"envoy.extensions.matching.input_matchers.consistent_hashing.v3.ConsistentHashing.seed":         {},
	"envoy.extensions.matching.input_matchers.runtime_fraction.v3.RuntimeFraction.runtime_fraction": {},
	"envoy.extensions.matching.input_matchers.runtime_fraction.v3.RuntimeFraction.seed":             {},
	"xds.type.matcher.v3.Matcher.MatcherList.Predicate.PredicateList.predicate":                     {},
	"xds.type.matcher.v3.Matcher.MatcherTree.input":                                                 {},
	"xds.type.matcher.v3.Matcher.MatcherTree.exact_match_map":                                       {},
	"xds.type.matcher.v3.Matcher.MatcherTree.prefix_match_map":                                      {},
	"xds.type.matcher.v3.Matcher.MatcherTree.MatchMap.map":                                          {},
	// A matcher_tree's custom_match: Envoy's IP matcher (package
	// httpmatch), whatever the tree's user.
	"xds.type.matcher.v3.Matcher.MatcherTree.custom_match":   {},
	"xds.type.matcher.v3.IPMatcher.range_matchers":           {},
	"xds.type.matcher.v3.IPMatcher.IPRangeMatcher.ranges":    {},
	"xds.type.matcher.v3.IPMatcher.IPRangeMatcher.on_match":  {},
	"xds.type.matcher.v3.IPMatcher.IPRangeMatcher.exclusive": {},
	"xds.type.matcher.v3.StringMatcher.exact":                {},
	"xds.type.matcher.v3.StringMatcher.prefix":               {},
	"xds.type.matcher.v3.StringMatcher.suffix":               {},
	"xds.type.matcher.v3.StringMatcher.safe_regex":           {},
	"xds.type.matcher.v3.StringMatcher.contains":             {},
	"xds.type.matcher.v3.StringMatcher.ignore_case":          {},
	// google_re2 (an empty message in xDS) names the RE2 engine, the one
	// Go's regexp is.
	"xds.type.matcher.v3.RegexMatcher.google_re2": {},
	"xds.type.matcher.v3.RegexMatcher.regex":      {},
	"xds.core.v3.TypedExtensionConfig.name":       {},
	"xds.core.v3.TypedExtensionConfig.typed_config": {types: []protoreflect.FullName{
		"envoy.type.matcher.v3.HttpRequestHeaderMatchInput", "envoy.type.matcher.v3.HttpResponseHeaderMatchInput",
		"envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput", "envoy.type.matcher.v3.HttpResponseStatusCodeClassMatchInput",
		"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy",
		"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy",
		// The udp_proxy's matcher: its inputs and its Route action
		// (support_udpproxy.go).
		"envoy.extensions.matching.common_inputs.network.v3.SourceIPInput", "envoy.extensions.matching.common_inputs.network.v3.SourcePortInput",
		"envoy.extensions.matching.common_inputs.network.v3.DestinationIPInput", "envoy.extensions.matching.common_inputs.network.v3.DestinationPortInput",
		"envoy.extensions.filters.udp.udp_proxy.v3.Route",
		// The match delegate's actions (support_composite.go).
		"envoy.extensions.filters.common.matcher.action.v3.SkipFilter", "envoy.extensions.filters.http.composite.v3.ExecuteFilterAction",
		// The connection manager's forward_client_cert_matcher action
		// (support_xfcc_matcher.go).
		"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ForwardClientCertConfig",
		// The RBAC matchers' action and the inputs they read beyond the
		// ones above (package rbacengine), and the IP matcher.
		"envoy.config.rbac.v3.Action",
		"envoy.extensions.matching.common_inputs.network.v3.DirectSourceIPInput", "envoy.extensions.matching.common_inputs.network.v3.ServerNameInput",
		"envoy.extensions.matching.common_inputs.ssl.v3.UriSanInput", "envoy.extensions.matching.common_inputs.ssl.v3.DnsSanInput",
		"envoy.extensions.matching.common_inputs.ssl.v3.SubjectInput",
		"xds.type.matcher.v3.IPMatcher",
		// A single_predicate's custom_match.
		"envoy.extensions.matching.input_matchers.ip.v3.Ip",
		"envoy.extensions.matching.input_matchers.consistent_hashing.v3.ConsistentHashing",
		"envoy.extensions.matching.input_matchers.runtime_fraction.v3.RuntimeFraction",
		// A StringMatcher's custom (support_lua.go).
		"envoy.extensions.string_matcher.lua.v3.Lua",
		// The common inputs, the CEL and metadata matchers
		// (support_matching_common.go) and the matcher cluster
		// specifier's action.
		"xds.type.matcher.v3.HttpAttributesCelMatchInput", "xds.type.matcher.v3.CelMatcher",
		"envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput",
		"envoy.extensions.matching.input_matchers.metadata.v3.Metadata",
		"envoy.extensions.matching.common_inputs.environment_variable.v3.Config",
		"envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction",
		// A filter_chain_matcher's format_string action
		// (pkg/proxy/listener/chainaction.go).
		"envoy.config.core.v3.SubstitutionFormatString",
		// The listener's filter_chain_matcher: the inputs it reads beyond
		// the ones above and its action, a chain's name
		// (pkg/proxy/listener/chainmatcher.go).
		"envoy.extensions.matching.common_inputs.network.v3.SourceTypeInput",
		"envoy.extensions.matching.common_inputs.network.v3.TransportProtocolInput",
		"envoy.extensions.matching.common_inputs.network.v3.ApplicationProtocolInput",
		// The filter state input: HTTP matchers and RBAC's (the filter
		// chain matcher and the UDP proxy refuse it).
		"envoy.extensions.matching.common_inputs.network.v3.FilterStateInput",
		"google.protobuf.StringValue",
	}},
	"envoy.extensions.matching.common_inputs.network.v3.FilterStateInput.key":                                    {},
	"envoy.type.matcher.v3.HttpRequestHeaderMatchInput.header_name":                                              {},
	"envoy.type.matcher.v3.HttpResponseHeaderMatchInput.header_name":                                             {},
	"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy.body":                    {},
	"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy.status_code":             {},
	"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy.response_headers_to_add": {},

	// envoy.filters.http.ip_tagging (ip_tags_datasource is a file read
	// once: its watched_directory is refused).
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.request_type":       {},
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.ip_tags":            {},
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.ip_tag_header":      {},
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.ip_tags_datasource": {},
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.IPTag.ip_tag_name":  {},
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.IPTag.ip_list":      {},
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.IpTagHeader.header": {},
	"envoy.extensions.filters.http.ip_tagging.v3.IPTagging.IpTagHeader.action": {},

	// envoy.filters.http.admission_control.
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.enabled":                                          {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.success_criteria":                                 {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.sampling_window":                                  {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.aggression":                                       {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.sr_threshold":                                     {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.rps_threshold":                                    {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.max_rejection_probability":                        {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.SuccessCriteria.http_criteria":                    {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.SuccessCriteria.grpc_criteria":                    {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.SuccessCriteria.HttpCriteria.http_success_status": {},
	"envoy.extensions.filters.http.admission_control.v3.AdmissionControl.SuccessCriteria.GrpcCriteria.grpc_success_status": {},
	"envoy.config.core.v3.RuntimePercent.default_value":                                                                    {},
	"envoy.config.core.v3.RuntimePercent.runtime_key":                                                                      {},

	// envoy.filters.http.adaptive_concurrency with the gradient
	// controller, a sampled or a fixed minRTT.
	"envoy.extensions.filters.http.adaptive_concurrency.v3.AdaptiveConcurrency.gradient_controller_config":                                         {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.AdaptiveConcurrency.enabled":                                                            {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.AdaptiveConcurrency.concurrency_limit_exceeded_status":                                  {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.sample_aggregate_percentile":                                   {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.concurrency_limit_params":                                      {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.min_rtt_calc_params":                                           {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.ConcurrencyLimitCalculationParams.max_concurrency_limit":       {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.ConcurrencyLimitCalculationParams.concurrency_update_interval": {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.MinimumRTTCalculationParams.interval":                          {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.MinimumRTTCalculationParams.request_count":                     {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.MinimumRTTCalculationParams.jitter":                            {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.MinimumRTTCalculationParams.min_concurrency":                   {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.MinimumRTTCalculationParams.buffer":                            {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.MinimumRTTCalculationParams.fixed_value":                       {},
	"envoy.extensions.filters.http.adaptive_concurrency.v3.GradientControllerConfig.ConcurrencyLimitCalculationParams.min_concurrency_limit":       {},

	// envoy.filters.network.direct_response (envoy.filters.network.echo
	// has no field).
	"envoy.extensions.filters.network.direct_response.v3.Config.response": {},
}
