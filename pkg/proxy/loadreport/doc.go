// Package loadreport is Envoy's load stats reporter: the client side of
// the Load Reporting Service (envoy.service.load_stats.v3
// LoadReportingService.StreamLoadStats) that the bootstrap's
// cluster_manager.load_stats_config names.
//
// The reporter opens one gRPC stream; its first request carries the node
// (with the client feature envoy.lrs.supports_send_all_clusters). Each
// LoadStatsResponse names the clusters to report on (or all of them) and
// the interval; from then on, every interval, a request carries one
// ClusterStats per cluster: its requests per locality and priority
// (successful, in progress, failed, issued, counted per host by the
// router and latched at each report), its dropped requests, and the
// interval it measured. A lost stream is opened again after Envoy's fixed
// retry delay. The load_reporter.* stats count what it does.
package loadreport
