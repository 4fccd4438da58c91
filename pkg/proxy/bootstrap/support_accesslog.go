package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedAccessLog lists the access-log fields Outrigger implements: the
// loggers, their formats and every access-log filter (see supportedCore).
var supportedAccessLog = map[protoreflect.FullName]fieldSupport{
	"envoy.config.accesslog.v3.AccessLog.name":         {},
	"envoy.config.accesslog.v3.AccessLog.typed_config": {category: "envoy.access_loggers", byName: true},
	"envoy.config.accesslog.v3.AccessLog.filter":       {},

	// The loggers.
	"envoy.extensions.access_loggers.file.v3.FileAccessLog.path":              {},
	"envoy.extensions.access_loggers.file.v3.FileAccessLog.format":            {},
	"envoy.extensions.access_loggers.file.v3.FileAccessLog.json_format":       {},
	"envoy.extensions.access_loggers.file.v3.FileAccessLog.typed_json_format": {},
	"envoy.extensions.access_loggers.file.v3.FileAccessLog.log_format":        {},
	"envoy.extensions.access_loggers.stream.v3.StdoutAccessLog.log_format":    {},
	"envoy.extensions.access_loggers.stream.v3.StderrAccessLog.log_format":    {},

	"envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig.common_config":                       {},
	"envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig.additional_request_headers_to_log":   {},
	"envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig.additional_response_headers_to_log":  {},
	"envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig.additional_response_trailers_to_log": {},
	"envoy.extensions.access_loggers.grpc.v3.TcpGrpcAccessLogConfig.common_config":                        {},
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.log_name":                          {},
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.grpc_service":                      {},
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.transport_api_version":             {values: []string{"AUTO", "V3"}},
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.buffer_flush_interval":             {},
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.buffer_size_bytes":                 {},
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.custom_tags":                       {},
	// num_retries only, as Envoy reads it (the OpenTelemetry logger refuses it).
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.grpc_stream_retry_policy":    {},
	"envoy.extensions.access_loggers.grpc.v3.CommonGrpcAccessLogConfig.filter_state_objects_to_log": {},
	// The OpenTelemetry logger (common_config's retry policy is refused
	// when it is compiled; HttpService's fields and the resource
	// detectors' are listed with tracing's).
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.resource_detectors":          {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.http_service":                {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.common_config":               {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.grpc_service":                {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.log_name":                    {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.buffer_flush_interval":       {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.buffer_size_bytes":           {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.filter_state_objects_to_log": {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.custom_tags":                 {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.disable_builtin_labels":      {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.resource_attributes":         {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.body":                        {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.attributes":                  {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.stat_prefix":                 {},
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig.formatters":                  {},
	// OTLP values: the logger's templates take strings, lists and arrays
	// (other kinds are refused when it is compiled); resource attributes
	// are sent as given.
	"opentelemetry.proto.common.v1.AnyValue.string_value": {},
	"opentelemetry.proto.common.v1.AnyValue.bool_value":   {},
	"opentelemetry.proto.common.v1.AnyValue.int_value":    {},
	"opentelemetry.proto.common.v1.AnyValue.double_value": {},
	"opentelemetry.proto.common.v1.AnyValue.array_value":  {},
	"opentelemetry.proto.common.v1.AnyValue.kvlist_value": {},
	"opentelemetry.proto.common.v1.AnyValue.bytes_value":  {},
	"opentelemetry.proto.common.v1.ArrayValue.values":     {},
	"opentelemetry.proto.common.v1.KeyValueList.values":   {},
	"opentelemetry.proto.common.v1.KeyValue.key":          {},
	"opentelemetry.proto.common.v1.KeyValue.value":        {},
	"envoy.type.tracing.v3.CustomTag.tag":                 {},
	"envoy.type.tracing.v3.CustomTag.literal":             {},
	"envoy.type.tracing.v3.CustomTag.environment":         {},
	"envoy.type.tracing.v3.CustomTag.request_header":      {},
	"envoy.type.tracing.v3.CustomTag.value":               {},
	// value_type: typed attributes in the OpenTelemetry tracer; the
	// other tracers and the access logs keep the string, as Envoy's.
	"envoy.type.tracing.v3.CustomTag.value_type":                {},
	"envoy.type.tracing.v3.CustomTag.Literal.value":             {},
	"envoy.type.tracing.v3.CustomTag.Environment.name":          {},
	"envoy.type.tracing.v3.CustomTag.Environment.default_value": {},
	"envoy.type.tracing.v3.CustomTag.Header.name":               {},
	"envoy.type.tracing.v3.CustomTag.Header.default_value":      {},
	// Metadata tags (tracing's custom tags too): request, cluster and
	// host metadata; the route kind is refused when the tag is compiled.
	"envoy.type.tracing.v3.CustomTag.metadata":               {},
	"envoy.type.tracing.v3.CustomTag.Metadata.kind":          {},
	"envoy.type.tracing.v3.CustomTag.Metadata.metadata_key":  {},
	"envoy.type.tracing.v3.CustomTag.Metadata.default_value": {},
	"envoy.type.metadata.v3.MetadataKind.request":            {},
	"envoy.type.metadata.v3.MetadataKind.route":              {},
	"envoy.type.metadata.v3.MetadataKind.cluster":            {},
	"envoy.type.metadata.v3.MetadataKind.host":               {},
	"envoy.type.metadata.v3.MetadataKey.key":                 {},
	"envoy.type.metadata.v3.MetadataKey.path":                {},
	"envoy.type.metadata.v3.MetadataKey.PathSegment.key":     {},

	// gRPC services (the access log service's; later tracing's and
	// authorization's).
	"envoy.config.core.v3.GrpcService.envoy_grpc":             {},
	"envoy.config.core.v3.GrpcService.google_grpc":            {},
	"envoy.config.core.v3.GrpcService.timeout":                {},
	"envoy.config.core.v3.GrpcService.initial_metadata":       {},
	"envoy.config.core.v3.GrpcService.EnvoyGrpc.cluster_name": {},
	"envoy.config.core.v3.GrpcService.EnvoyGrpc.authority":    {},
	// retry_policy (envoy_grpc services only, as Envoy) retries each
	// call; envoy_grpc.retry_policy is the xDS streams' reconnection
	// back-off (Envoy honours it there only). Their RetryPolicy's
	// retry_on is read by grpcservice, which refuses the conditions a
	// gRPC client cannot tell; jwt_authn refuses it.
	"envoy.config.core.v3.GrpcService.retry_policy":                         {},
	"envoy.config.core.v3.GrpcService.EnvoyGrpc.retry_policy":               {},
	"envoy.config.core.v3.GrpcService.EnvoyGrpc.max_receive_message_length": {},
	"envoy.config.core.v3.GrpcService.EnvoyGrpc.skip_envoy_headers":         {},
	"envoy.config.core.v3.RetryPolicy.retry_on":                             {},
	"envoy.config.core.v3.GrpcService.GoogleGrpc.target_uri":                {},
	"envoy.config.core.v3.GrpcService.GoogleGrpc.stat_prefix":               {},

	// Formats.
	"envoy.config.core.v3.SubstitutionFormatString.text_format":         {},
	"envoy.config.core.v3.SubstitutionFormatString.text_format_source":  {},
	"envoy.config.core.v3.SubstitutionFormatString.json_format":         {},
	"envoy.config.core.v3.SubstitutionFormatString.omit_empty_values":   {},
	"envoy.config.core.v3.SubstitutionFormatString.json_format_options": {},
	// The content type of local reply bodies (local_reply_config); access
	// logs have none, and Envoy ignores it there too.
	"envoy.config.core.v3.SubstitutionFormatString.content_type": {},
	"envoy.config.core.v3.JsonFormatOptions.sort_properties":     {},
	// Formatter extensions (envoy.formatter.*), whose typed_config the
	// TypedExtensionConfig entry checks; both take an empty message.
	"envoy.config.core.v3.SubstitutionFormatString.formatters": {},

	// Filters.
	"envoy.config.accesslog.v3.AccessLogFilter.status_code_filter":      {},
	"envoy.config.accesslog.v3.AccessLogFilter.duration_filter":         {},
	"envoy.config.accesslog.v3.AccessLogFilter.not_health_check_filter": {},
	"envoy.config.accesslog.v3.AccessLogFilter.traceable_filter":        {},
	"envoy.config.accesslog.v3.AccessLogFilter.runtime_filter":          {},
	"envoy.config.accesslog.v3.AccessLogFilter.and_filter":              {},
	"envoy.config.accesslog.v3.AccessLogFilter.or_filter":               {},
	"envoy.config.accesslog.v3.AccessLogFilter.header_filter":           {},
	"envoy.config.accesslog.v3.AccessLogFilter.response_flag_filter":    {},
	"envoy.config.accesslog.v3.AccessLogFilter.grpc_status_filter":      {},
	"envoy.config.accesslog.v3.AccessLogFilter.metadata_filter":         {},
	// extension_filter: the CEL filter.
	"envoy.config.accesslog.v3.AccessLogFilter.extension_filter":                 {},
	"envoy.config.accesslog.v3.ExtensionFilter.name":                             {},
	"envoy.config.accesslog.v3.ExtensionFilter.typed_config":                     {category: "envoy.access_loggers.extension_filters", byName: true},
	"envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter.expression": {},
	"envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter.cel_config": {},
	"envoy.config.accesslog.v3.AccessLogFilter.log_type_filter":                  {},
	"envoy.config.accesslog.v3.StatusCodeFilter.comparison":                      {},
	"envoy.config.accesslog.v3.DurationFilter.comparison":                        {},
	"envoy.config.accesslog.v3.ComparisonFilter.op":                              {},
	"envoy.config.accesslog.v3.ComparisonFilter.value":                           {},
	"envoy.config.core.v3.RuntimeUInt32.default_value":                           {},
	"envoy.config.core.v3.RuntimeUInt32.runtime_key":                             {},
	"envoy.config.accesslog.v3.RuntimeFilter.runtime_key":                        {},
	"envoy.config.accesslog.v3.RuntimeFilter.percent_sampled":                    {},
	"envoy.config.accesslog.v3.RuntimeFilter.use_independent_randomness":         {},
	"envoy.config.accesslog.v3.AndFilter.filters":                                {},
	"envoy.config.accesslog.v3.OrFilter.filters":                                 {},
	"envoy.config.accesslog.v3.HeaderFilter.header":                              {},
	"envoy.config.accesslog.v3.ResponseFlagFilter.flags":                         {},
	"envoy.config.accesslog.v3.GrpcStatusFilter.statuses":                        {},
	"envoy.config.accesslog.v3.GrpcStatusFilter.exclude":                         {},
	"envoy.config.accesslog.v3.MetadataFilter.matcher":                           {},
	"envoy.config.accesslog.v3.MetadataFilter.match_if_key_not_found":            {},
	"envoy.config.accesslog.v3.LogTypeFilter.types":                              {},
	"envoy.config.accesslog.v3.LogTypeFilter.exclude":                            {},

	// The matchers of metadata_filter.
	"envoy.type.matcher.v3.MetadataMatcher.filter":          {},
	"envoy.type.matcher.v3.MetadataMatcher.path":            {},
	"envoy.type.matcher.v3.MetadataMatcher.value":           {},
	"envoy.type.matcher.v3.MetadataMatcher.PathSegment.key": {},
	"envoy.type.matcher.v3.ValueMatcher.null_match":         {},
	"envoy.type.matcher.v3.ValueMatcher.double_match":       {},
	"envoy.type.matcher.v3.ValueMatcher.string_match":       {},
	"envoy.type.matcher.v3.ValueMatcher.bool_match":         {},
	"envoy.type.matcher.v3.ValueMatcher.present_match":      {},
	"envoy.type.matcher.v3.ValueMatcher.list_match":         {},
	"envoy.type.matcher.v3.ValueMatcher.or_match":           {},
	"envoy.type.matcher.v3.DoubleMatcher.range":             {},
	"envoy.type.matcher.v3.DoubleMatcher.exact":             {},
	"envoy.type.v3.DoubleRange.start":                       {},
	"envoy.type.v3.DoubleRange.end":                         {},
	"envoy.type.matcher.v3.ListMatcher.one_of":              {},
	"envoy.type.matcher.v3.OrMatcher.value_matchers":        {},
	"envoy.type.v3.FractionalPercent.numerator":             {},
	"envoy.type.v3.FractionalPercent.denominator":           {},
}
