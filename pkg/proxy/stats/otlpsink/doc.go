// Package otlpsink is Envoy's envoy.stat_sinks.open_telemetry: at every
// stats flush it exports the used counters, gauges and histograms as OTLP
// metrics, to a collector's MetricsService over gRPC or as OTLP/HTTP
// protobuf posts.
//
// The conversion follows Envoy's sink: a gauge becomes a Gauge point, a
// counter a monotonic Sum (its increase since the last flush or its total,
// report_counters_as_deltas), a histogram a Histogram point with the
// store's bucket bounds (the last interval or everything since start,
// report_histograms_as_deltas). Names are the tag-extracted ones unless
// use_tag_extracted_name is false, after prefix and a dot; tags become
// string attributes unless emit_tags_as_attributes is false. Every point
// is stamped with the flush's time and starts at the previous flush.
package otlpsink
