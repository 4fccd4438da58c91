package bootstrap

import "testing"

// Type URLs of the stats sinks.
const (
	statsdURL    = "type.googleapis.com/envoy.config.metrics.v3.StatsdSink"
	dogStatsdURL = "type.googleapis.com/envoy.config.metrics.v3.DogStatsdSink"
	hystrixURL   = "type.googleapis.com/envoy.config.metrics.v3.HystrixSink"
)

// TestValidateStatsConfig: every stats_config and stats_sinks field in the
// support table validates; the ones left out are named by path.
func TestValidateStatsConfig(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"every supported field": {overlay: `
stats_server_version_override: 123
stats_config:
  use_all_default_tags: false
  stats_tags:
  - {tag_name: tenant, regex: '^cluster\.((.+?)-)'}
  - {tag_name: zone, fixed_value: eu-1}
  - {tag_name: envoy.cluster_name}
  stats_matcher:
    exclusion_list:
      patterns: [{prefix: cluster.internal.}, {safe_regex: {regex: '.*_debug$'}}, {suffix: .x, ignore_case: true}]
  histogram_bucket_settings:
  - {match: {prefix: cluster.}, buckets: [1, 10, 100]}
stats_sinks:
- name: envoy.stat_sinks.statsd
  typed_config: {"@type": ` + statsdURL + `, address: {socket_address: {address: 127.0.0.1, port_value: 8125}}, prefix: edge, scale_histogram_units_to_milliseconds: true}
- name: envoy.stat_sinks.statsd
  typed_config: {"@type": ` + statsdURL + `, tcp_cluster_name: statsd}
- name: proxy.stat_sinks.dog_statsd
  typed_config: {"@type": ` + dogStatsdURL + `, address: {socket_address: {address: 127.0.0.1, port_value: 8125}}, prefix: dd, max_bytes_per_datagram: 512}
- name: envoy.stat_sinks.hystrix
  typed_config: {"@type": ` + hystrixURL + `, num_buckets: 12}
`},
		"inclusion list":        {overlay: `stats_config: {stats_matcher: {inclusion_list: {patterns: [{exact: server.live}]}}}`},
		"reject all":            {overlay: `stats_config: {stats_matcher: {reject_all: true}}`},
		"hystrix with defaults": {overlay: `stats_sinks: [{name: envoy.stat_sinks.hystrix, typed_config: {"@type": ` + hystrixURL + `}}]`},
	})
}

func TestValidateStatsSupport(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"bucket bins": {
			overlay: `stats_config: {histogram_bucket_settings: [{match: {prefix: x}, buckets: [1], bins: 10}]}`,
			want: []string{"stats_config.histogram_bucket_settings[0].bins: not supported by Outrigger: " +
				"the circllhist library Outrigger records histograms with (circonusllhist) allocates a fixed 100 bins and " +
				"grows as needed; it takes no initial size"},
		},
		"default tag overrides": {
			overlay: `stats_config: {allow_default_tag_overrides: true}`,
			want:    []string{"stats_config.allow_default_tag_overrides: not supported by Outrigger"},
		},
		"a metrics service sink without its service": {
			overlay: `stats_sinks: [{name: envoy.stat_sinks.metrics_service, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig}}]`,
			want:    []string{`stats_sinks[0].typed_config.grpc_service: value is required`},
		},
		"an OpenTelemetry sink's metric conversions": {
			overlay: `stats_sinks: [{name: envoy.stat_sinks.open_telemetry, typed_config: {"@type": type.googleapis.com/envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig, grpc_service: {envoy_grpc: {cluster_name: c}}, custom_metric_conversions: {}}}]`,
			want:    []string{`stats_sinks[0].typed_config.custom_metric_conversions: not supported by Outrigger`},
		},
		"a sink where an access logger goes": {
			overlay: accessLogYAML(`{"@type": ` + statsdURL + `}`),
			want:    []string{`admin.access_log[1].typed_config: extension "proxy.stat_sinks.statsd" (category envoy.stats_sinks) cannot be used here: expected category envoy.access_loggers`},
		},
		"disabled sink": {
			overlay: `stats_sinks: [{name: envoy.stat_sinks.hystrix, typed_config: {"@type": ` + hystrixURL + `}}]`,
			disable: []string{"envoy.stats_sinks/envoy.stat_sinks.hystrix"},
			want:    []string{`stats_sinks[0].typed_config: extension "proxy.stat_sinks.hystrix" is disabled by --disable-extensions`},
		},
	})
}
