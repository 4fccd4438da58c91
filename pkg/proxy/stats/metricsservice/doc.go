// Package metricsservice is Envoy's envoy.stat_sinks.metrics_service: at
// every stats flush it streams the used counters, gauges and histograms as
// Prometheus metric families (io.prometheus.client) to a gRPC
// envoy.service.metrics.v3.MetricsService, over one long-lived
// StreamMetrics stream whose first message carries the node.
//
// As in Envoy: a counter is a COUNTER (its total, or its increase since
// the last flush with report_counters_as_deltas), a gauge a GAUGE, a
// histogram a SUMMARY (the interval's quantiles, count and sum) and/or a
// HISTOGRAM (the interval's cumulative bucket counts) by
// histogram_emit_mode; names are the full stat names, or the
// tag-extracted ones with the tags as labels when emit_tags_as_labels is
// set; each metric is stamped with the flush's time in milliseconds.
package metricsservice
