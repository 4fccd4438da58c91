package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedTracing lists the tracing fields Outrigger implements (see
// supportedCore): the connection manager's tracing, the bootstrap's
// tracing.http (the provider of connection managers that name none), the
// route decorator, the router's start_child_span and the tracers' own
// configurations. Left out, and so refused with their path: the tracers'
// custom exporters; the OpenTelemetry resource detectors and samplers
// other than the environment and static_config detectors and the
// always_on, parent_based and trace_id_ratio_based samplers are refused by
// their type.
var supportedTracing = map[protoreflect.FullName]fieldSupport{
	"envoy.config.bootstrap.v3.Bootstrap.tracing":     {},
	"envoy.config.trace.v3.Tracing.http":              {},
	"envoy.config.trace.v3.Tracing.Http.name":         {},
	"envoy.config.trace.v3.Tracing.Http.typed_config": {category: "envoy.tracers", byName: true},

	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.tracing":                     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.client_sampling":     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.random_sampling":     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.overall_sampling":    {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.max_path_tag_length": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.custom_tags":         {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.provider":            {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.spawn_upstream_span": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.verbose":             {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.operation":           {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.upstream_operation":  {},

	"envoy.config.route.v3.Route.tracing":              {},
	"envoy.config.route.v3.Tracing.client_sampling":    {},
	"envoy.config.route.v3.Tracing.random_sampling":    {},
	"envoy.config.route.v3.Tracing.overall_sampling":   {},
	"envoy.config.route.v3.Tracing.custom_tags":        {},
	"envoy.config.route.v3.Tracing.operation":          {},
	"envoy.config.route.v3.Tracing.upstream_operation": {},
	"envoy.config.route.v3.Route.decorator":            {},
	"envoy.config.route.v3.Decorator.operation":        {},
	"envoy.config.route.v3.Decorator.propagate":        {},

	"envoy.extensions.filters.http.router.v3.Router.start_child_span": {},

	// The request id extension: the UUID one, Envoy's default, with both
	// of its options (pkg/proxy/requestid/uuid).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.request_id_extension": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.RequestIDExtension.typed_config":            {category: "envoy.request_id"},
	"envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig.pack_trace_reason":                              {},
	"envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig.use_request_id_for_trace_sampling":              {},

	// The OpenTelemetry tracer.
	"envoy.config.trace.v3.OpenTelemetryConfig.grpc_service":                          {},
	"envoy.config.trace.v3.OpenTelemetryConfig.http_service":                          {},
	"envoy.config.trace.v3.OpenTelemetryConfig.service_name":                          {},
	"envoy.config.trace.v3.OpenTelemetryConfig.max_cache_size":                        {},
	"envoy.config.trace.v3.OpenTelemetryConfig.set_service_name_resource_attribute":   {},
	"envoy.config.trace.v3.OpenTelemetryConfig.set_telemetry_sdk_resource_attributes": {},
	"envoy.config.trace.v3.OpenTelemetryConfig.set_instrumentation_scope":             {},
	// Resource detectors and samplers are extensions (the environment and
	// static_config detectors; the always_on, parent_based and
	// trace_id_ratio_based samplers) that the TypedExtensionConfig entry
	// checks; their own fields follow.
	"envoy.config.trace.v3.OpenTelemetryConfig.resource_detectors":                                               {},
	"envoy.config.trace.v3.OpenTelemetryConfig.sampler":                                                          {},
	"envoy.extensions.tracers.opentelemetry.samplers.v3.TraceIdRatioBasedSamplerConfig.sampling_percentage":      {},
	"envoy.extensions.tracers.opentelemetry.samplers.v3.ParentBasedSamplerConfig.wrapped_sampler":                {},
	"envoy.extensions.tracers.opentelemetry.resource_detectors.v3.StaticConfigResourceDetectorConfig.attributes": {},
	"envoy.config.core.v3.HttpService.http_uri":                                                                  {},
	"envoy.config.core.v3.HttpService.request_headers_to_add":                                                    {},
	// HttpUri's fields are listed with ext_authz's.

	// The Zipkin tracer: JSON v2 over HTTP, B3 headers.
	"envoy.config.trace.v3.ZipkinConfig.collector_cluster":          {},
	"envoy.config.trace.v3.ZipkinConfig.collector_endpoint":         {},
	"envoy.config.trace.v3.ZipkinConfig.trace_id_128bit":            {},
	"envoy.config.trace.v3.ZipkinConfig.shared_span_context":        {},
	"envoy.config.trace.v3.ZipkinConfig.timestamp_trace_ids":        {},
	"envoy.config.trace.v3.ZipkinConfig.collector_endpoint_version": {values: []string{"HTTP_JSON"}},
	"envoy.config.trace.v3.ZipkinConfig.collector_hostname":         {},
	"envoy.config.trace.v3.ZipkinConfig.collector_service":          {},
	"envoy.config.trace.v3.ZipkinConfig.trace_context_option":       {},
	"envoy.config.trace.v3.ZipkinConfig.split_spans_for_request":    {},
}
