package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedStats lists the stats configuration and stats sink fields Outrigger implements (see supportedCore).
// The string matchers of stats_matcher and histogram_bucket_settings
// (envoy.type.matcher.v3.StringMatcher) are listed with the routes'.
var supportedStats = map[protoreflect.FullName]fieldSupport{
	// Bootstrap.
	"envoy.config.bootstrap.v3.Bootstrap.stats_config":                  {},
	"envoy.config.bootstrap.v3.Bootstrap.stats_sinks":                   {},
	"envoy.config.bootstrap.v3.Bootstrap.stats_server_version_override": {},

	// stats_config.
	"envoy.config.metrics.v3.StatsConfig.stats_tags":                {},
	"envoy.config.metrics.v3.StatsConfig.use_all_default_tags":      {},
	"envoy.config.metrics.v3.StatsConfig.stats_matcher":             {},
	"envoy.config.metrics.v3.StatsConfig.histogram_bucket_settings": {},
	"envoy.config.metrics.v3.TagSpecifier.tag_name":                 {},
	"envoy.config.metrics.v3.TagSpecifier.regex":                    {},
	"envoy.config.metrics.v3.TagSpecifier.fixed_value":              {},
	"envoy.config.metrics.v3.StatsMatcher.reject_all":               {},
	"envoy.config.metrics.v3.StatsMatcher.exclusion_list":           {},
	"envoy.config.metrics.v3.StatsMatcher.inclusion_list":           {},
	"envoy.type.matcher.v3.ListStringMatcher.patterns":              {},
	"envoy.config.metrics.v3.HistogramBucketSettings.match":         {},
	"envoy.config.metrics.v3.HistogramBucketSettings.buckets":       {},

	// stats_sinks.
	"envoy.config.metrics.v3.StatsSink.name":                                                                  {},
	"envoy.config.metrics.v3.StatsSink.typed_config":                                                          {category: "envoy.stats_sinks"},
	"envoy.config.metrics.v3.StatsdSink.address":                                                              {},
	"envoy.config.metrics.v3.StatsdSink.tcp_cluster_name":                                                     {},
	"envoy.config.metrics.v3.StatsdSink.prefix":                                                               {},
	"envoy.config.metrics.v3.StatsdSink.scale_histogram_units_to_milliseconds":                                {},
	"envoy.config.metrics.v3.DogStatsdSink.address":                                                           {},
	"envoy.config.metrics.v3.DogStatsdSink.prefix":                                                            {},
	"envoy.config.metrics.v3.DogStatsdSink.max_bytes_per_datagram":                                            {},
	"envoy.config.metrics.v3.DogStatsdSink.scale_histogram_units_to_milliseconds":                             {},
	"envoy.extensions.stat_sinks.graphite_statsd.v3.GraphiteStatsdSink.address":                               {},
	"envoy.extensions.stat_sinks.graphite_statsd.v3.GraphiteStatsdSink.prefix":                                {},
	"envoy.extensions.stat_sinks.graphite_statsd.v3.GraphiteStatsdSink.max_bytes_per_datagram":                {},
	"envoy.extensions.stat_sinks.graphite_statsd.v3.GraphiteStatsdSink.scale_histogram_units_to_milliseconds": {},
	"envoy.config.metrics.v3.HystrixSink.num_buckets":                                                         {},

	// envoy.stat_sinks.metrics_service (pkg/proxy/stats/metricsservice).
	"envoy.config.metrics.v3.MetricsServiceConfig.grpc_service":              {},
	"envoy.config.metrics.v3.MetricsServiceConfig.transport_api_version":     {},
	"envoy.config.metrics.v3.MetricsServiceConfig.report_counters_as_deltas": {},
	"envoy.config.metrics.v3.MetricsServiceConfig.emit_tags_as_labels":       {},
	"envoy.config.metrics.v3.MetricsServiceConfig.histogram_emit_mode":       {},
	"envoy.config.metrics.v3.MetricsServiceConfig.batch_size":                {},

	// envoy.stat_sinks.open_telemetry (pkg/proxy/stats/otlpsink).
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.grpc_service":                {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.http_service":                {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.resource_detectors":          {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.report_counters_as_deltas":   {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.report_histograms_as_deltas": {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.emit_tags_as_attributes":     {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.use_tag_extracted_name":      {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.prefix":                      {},
	"envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig.max_data_points_per_request": {},
}
