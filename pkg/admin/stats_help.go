package admin

import "strings"

// statHelp returns the Prometheus HELP text of a tag-extracted stat name
// (such as "cluster.upstream_rq_total", the name with its tag values cut
// out), or "" when the stat has no description. Envoy prints no HELP
// lines; Outrigger adds them so that promtool's lint finds one for every
// stat it knows. The texts describe Envoy's stats in our own words.
func statHelp(stat string) string {
	if h, ok := statHelpExact[stat]; ok {
		return h
	}
	segs := strings.Split(stat, ".")
	for _, p := range statHelpPatterns {
		if globMatch(p.segs, segs) {
			return p.help
		}
	}
	return ""
}

// helpPattern is a compiled entry of statHelpGlobs.
type helpPattern struct {
	segs []string
	help string
}

// globMatch matches name segments against pattern segments, where "*" is
// any one segment and "**" any number of them, none included.
func globMatch(pattern, name []string) bool {
	for len(pattern) > 0 {
		switch p := pattern[0]; p {
		case "**":
			for i := 0; i <= len(name); i++ {
				if globMatch(pattern[1:], name[i:]) {
					return true
				}
			}
			return false
		default:
			if len(name) == 0 || (p != "*" && p != name[0]) {
				return false
			}
		}
		pattern, name = pattern[1:], name[1:]
	}
	return len(name) == 0
}

// statHelpExact and statHelpPatterns are built once from the tables
// below and only read afterwards.
var statHelpExact, statHelpPatterns = compileStatHelp()

func compileStatHelp() (map[string]string, []helpPattern) {
	exact := map[string]string{}
	var patterns []helpPattern
	add := func(name, help string) {
		if strings.Contains(name, "*") {
			patterns = append(patterns, helpPattern{segs: strings.Split(name, "."), help: help})
			return
		}
		exact[name] = help
	}
	for _, t := range [][][2]string{serverHelp, clusterHelp, httpHelp, listenerHelp, otherHelp} {
		for _, e := range t {
			add(e[0], e[1])
		}
	}
	// The discovery services' stats (file-based LDS today) share Envoy's
	// subscription stat names under each manager.
	for _, sub := range []string{"listener_manager.lds", "cluster_manager.cds"} {
		for _, e := range subscriptionHelp {
			add(sub+"."+e[0], e[1])
		}
	}
	return exact, patterns
}

// serverHelp describes the server's, runtime's and stat system's stats.
var serverHelp = [][2]string{
	{"server.uptime", "Seconds the server has been running."},
	{"server.live", "1 while the server is live (not draining or shutting down), else 0."},
	{"server.state", "Server state: 0 live, 1 draining, 2 pre-initializing, 3 initializing."},
	{"server.concurrency", "Number of worker threads (--concurrency)."},
	{"server.memory_allocated", "Bytes of memory the program has allocated and still uses."},
	{"server.memory_heap_size", "Bytes of heap the program has reserved from the system."},
	{"server.memory_physical_size", "Estimate of the bytes of physical memory the program uses."},
	{"server.total_connections", "Open downstream connections of this process and its hot-restart parent."},
	{"server.parent_connections", "Open downstream connections still held by the hot-restart parent."},
	{"server.version", "Integer form of the source revision (or stats_server_version_override)."},
	{"server.version_text", "Version string of the server, as the text_value label."},
	{"server.days_until_first_cert_expiring", "Days until the soonest of the configured certificates expires."},
	{"server.seconds_until_first_ocsp_response_expiring", "Seconds until the soonest configured OCSP response expires."},
	{"server.hot_restart_epoch", "Hot-restart epoch of this process (--restart-epoch)."},
	{"server.hot_restart_generation", "Hot-restart generation: 1 for a process started without a parent."},
	{"server.initialization_time_ms", "Milliseconds from start until the server was initialized."},
	{"server.static_unknown_fields", "Unknown fields met in the static configuration."},
	{"server.dynamic_unknown_fields", "Unknown fields met in configuration received at run time."},
	{"server.debug_assertion_failures", "Debug assertions that failed (debug builds)."},
	{"server.proxy_bug_failures", "Internal errors detected in release builds."},
	{"server.proxy_notifications", "Notable internal events that were reported."},
	{"server.wip_protos", "Uses of configuration fields marked work in progress."},
	{"server.dropped_stat_flushes", "Stat flushes skipped because the previous one was still running."},
	{"server.stats_recent_lookups", "Stat names looked up by name recently (see /stats/recentlookups)."},
	{"server.compilation_settings.fips_mode", "1 when the build runs in FIPS mode, else 0."},
	{"server.main_thread.watchdog_miss", "Times the main thread's watchdog was late by more than the miss threshold."},
	{"server.main_thread.watchdog_mega_miss", "Times the main thread's watchdog was late by more than the mega-miss threshold."},
	{"control_plane.identifier", "Identifier of the management server in use, as the text_value label."},
	{"control_plane.connected_state", "1 while connected to the management server, else 0."},
	{"runtime.num_keys", "Runtime keys currently loaded."},
	{"runtime.num_layers", "Runtime layers currently loaded."},
	{"runtime.admin_overrides_active", "1 while runtime values set through the admin interface are in effect."},
	{"runtime.load_success", "Runtime loads that succeeded."},
	{"runtime.load_error", "Runtime loads that failed."},
	{"runtime.override_dir_exists", "Runtime loads that found an override directory."},
	{"runtime.override_dir_not_exists", "Runtime loads that found no override directory."},
	{"runtime.deprecated_feature_use", "Uses of deprecated features, counted since the last hot restart."},
	{"runtime.deprecated_feature_seen_since_process_start", "Uses of deprecated features since this process started."},
	{"stats.overflow", "Stats that could not be allocated because a limit was reached."},
}

// clusterHelp describes the cluster manager's and each cluster's stats.
var clusterHelp = [][2]string{
	{"cluster_manager.active_clusters", "Clusters currently active (warmed)."},
	{"cluster_manager.warming_clusters", "Clusters currently warming, not yet in use."},
	{"cluster_manager.cluster_added", "Clusters added, statically or by discovery."},
	{"cluster_manager.cluster_modified", "Clusters changed by discovery."},
	{"cluster_manager.cluster_removed", "Clusters removed by discovery."},
	{"cluster_manager.cluster_updated", "Cluster membership updates delivered."},
	{"cluster_manager.cluster_updated_via_merge", "Cluster membership updates delivered as merged batches."},
	{"cluster_manager.update_merge_cancelled", "Merged membership updates cancelled before delivery."},
	{"cluster_manager.update_out_of_merge_window", "Membership updates that arrived outside the merge window."},

	{"cluster.upstream_cx_total", "Connections opened to the cluster's hosts."},
	{"cluster.upstream_cx_active", "Connections currently open to the cluster's hosts."},
	{"cluster.upstream_cx_http1_total", "HTTP/1.1 connections opened to the cluster's hosts."},
	{"cluster.upstream_cx_http2_total", "HTTP/2 connections opened to the cluster's hosts."},
	{"cluster.upstream_cx_http3_total", "HTTP/3 connections opened to the cluster's hosts."},
	{"cluster.upstream_cx_connect_fail", "Connection attempts to the cluster's hosts that failed."},
	{"cluster.upstream_cx_connect_timeout", "Connection attempts to the cluster's hosts that timed out."},
	{"cluster.upstream_cx_connect_attempts_exceeded", "Times consecutive connection failures exceeded the configured attempts."},
	{"cluster.upstream_cx_connect_ms", "Time to establish a connection to a host, in milliseconds."},
	{"cluster.upstream_cx_length_ms", "Lifetime of connections to the cluster's hosts, in milliseconds."},
	{"cluster.upstream_cx_destroy", "Connections to the cluster's hosts that were closed."},
	{"cluster.upstream_cx_destroy_local", "Connections to the cluster's hosts closed by the proxy."},
	{"cluster.upstream_cx_destroy_remote", "Connections to the cluster's hosts closed by the host."},
	{"cluster.upstream_cx_idle_timeout", "Connections to the cluster's hosts closed after their idle timeout."},
	{"cluster.upstream_cx_max_requests", "Connections closed after serving max_requests_per_connection requests."},
	{"cluster.upstream_cx_max_duration_reached", "Connections closed after reaching their maximum duration."},
	{"cluster.upstream_cx_none_healthy", "Connections not attempted because the cluster had no healthy host."},
	{"cluster.upstream_cx_overflow", "Connections refused by the cluster's connection circuit breaker."},
	{"cluster.upstream_cx_rx_bytes_total", "Bytes received from the cluster's hosts."},
	{"cluster.upstream_cx_tx_bytes_total", "Bytes sent to the cluster's hosts."},
	{"cluster.upstream_cx_protocol_error", "Connections to the cluster's hosts closed on a protocol error."},
	{"cluster.upstream_rq_total", "Requests sent to the cluster."},
	{"cluster.upstream_rq_active", "Requests to the cluster currently in flight."},
	{"cluster.upstream_rq_completed", "Requests to the cluster that completed with a response."},
	{"cluster.upstream_rq", "Responses from the cluster by status code (response_code label)."},
	{"cluster.upstream_rq_xx", "Responses from the cluster by status class (response_code_class label)."},
	{"cluster.upstream_rq_time", "Time from the request's start until the end of the cluster's response, in milliseconds."},
	{"cluster.upstream_rq_timeout", "Requests to the cluster that timed out waiting for a response."},
	{"cluster.upstream_rq_per_try_timeout", "Request attempts to the cluster that reached their per-try timeout."},
	{"cluster.upstream_rq_max_duration_reached", "Requests to the cluster ended on reaching their maximum duration."},
	{"cluster.upstream_rq_pending_total", "Requests that waited for a connection to the cluster."},
	{"cluster.upstream_rq_pending_active", "Requests currently waiting for a connection to the cluster."},
	{"cluster.upstream_rq_pending_overflow", "Requests refused by the cluster's pending-request circuit breaker."},
	{"cluster.upstream_rq_pending_failure_eject", "Pending requests failed because their connection failed."},
	{"cluster.upstream_rq_cancelled", "Requests cancelled before a connection to the cluster was obtained."},
	{"cluster.upstream_rq_rx_reset", "Requests to the cluster reset by the host."},
	{"cluster.upstream_rq_tx_reset", "Requests to the cluster reset by the proxy."},
	{"cluster.upstream_rq_retry", "Requests to the cluster retried."},
	{"cluster.upstream_rq_retry_success", "Retries to the cluster that succeeded."},
	{"cluster.upstream_rq_retry_overflow", "Retries not made because of the cluster's retry circuit breaker or budget."},
	{"cluster.upstream_rq_retry_limit_exceeded", "Requests not retried because they had used all their retries."},
	{"cluster.upstream_rq_retry_backoff_exponential", "Retries to the cluster that waited an exponential back-off."},
	{"cluster.upstream_rq_retry_backoff_ratelimited", "Retries to the cluster that waited the back-off a rate-limited response asked for."},
	{"cluster.upstream_rq_per_try_idle_timeout", "Request attempts to the cluster that reached their per-try idle timeout."},
	{"cluster.retry_or_shadow_abandoned", "Requests whose body outgrew the buffer kept for retries and shadows, which were given up."},
	{"cluster.lb_healthy_panic", "Load balancing decisions made in panic mode (too few healthy hosts)."},
	{"cluster.lb_recalculate_zone_structures", "Times the zone-aware routing state was computed again after a change of hosts."},
	{"cluster.lb_zone_cluster_too_small", "Zone-aware routing not done: fewer healthy upstream hosts than min_cluster_size."},
	{"cluster.lb_local_cluster_not_ok", "Zone-aware routing not done: the local cluster lacks this proxy's zone or is in panic."},
	{"cluster.lb_zone_number_differs", "Zone-aware routing not done: the local and upstream clusters differ in zones (no longer counted)."},
	{"cluster.lb_zone_routing_all_directly", "Zone-aware picks sent to the local zone, which has capacity for all of them."},
	{"cluster.lb_zone_routing_sampled", "Zone-aware picks sent to the local zone as its share of the traffic."},
	{"cluster.lb_zone_routing_cross_zone", "Zone-aware picks sent to another zone by its spare capacity."},
	{"cluster.lb_zone_no_capacity_left", "Cross-zone picks made at random because no zone had spare capacity left."},
	{"cluster.lb_subsets_active", "Load-balancer subsets that currently have hosts."},
	{"cluster.lb_subsets_created", "Load-balancer subsets created."},
	{"cluster.lb_subsets_removed", "Load-balancer subsets removed because they lost their last host."},
	{"cluster.lb_subsets_selected", "Picks that found the subset their metadata match criteria named."},
	{"cluster.lb_subsets_fallback", "Picks served by the fallback policy's subset."},
	{"cluster.lb_subsets_fallback_panic", "Picks served by any host (panic_mode_any) after the fallback subset had none."},
	{"cluster.lb_subsets_single_host_per_subset_duplicate", "Hosts left out of single-host subsets because another host has the same metadata."},
	{"cluster.membership_total", "Hosts in the cluster."},
	{"cluster.membership_healthy", "Healthy hosts in the cluster."},
	{"cluster.membership_degraded", "Degraded hosts in the cluster."},
	{"cluster.membership_excluded", "Hosts excluded from load balancing."},
	{"cluster.membership_change", "Changes of the cluster's host set."},
	{"cluster.max_host_weight", "Largest load-balancing weight among the cluster's hosts."},
	{"cluster.version", "Hash of the content of the cluster's last accepted endpoint update."},
	{"cluster.warming_state", "1 while the cluster is warming, else 0."},
	{"cluster.update_attempt", "Attempts to refresh the cluster's hosts (DNS or discovery)."},
	{"cluster.update_success", "Refreshes of the cluster's hosts that succeeded."},
	{"cluster.update_failure", "Refreshes of the cluster's hosts that failed."},
	{"cluster.update_empty", "Refreshes of the cluster's hosts that carried no host."},
	{"cluster.update_no_rebuild", "Successful refreshes that left the cluster's hosts unchanged."},
	{"cluster.assignment_stale", "Endpoint assignments that went stale before a new one arrived."},
	{"cluster.assignment_timeout_received", "Endpoint assignments received with a lease duration."},
	{"cluster.assignment_use_cached", "Times a cached endpoint assignment was used."},
	{"cluster.health_check.attempt", "Active health checks started."},
	{"cluster.health_check.success", "Active health checks that passed."},
	{"cluster.health_check.failure", "Active health checks that failed, by timeout, reset or bad answer."},
	{"cluster.health_check.passive_failure", "Hosts marked unhealthy by passive checks."},
	{"cluster.health_check.network_failure", "Active health checks that failed on a network error."},
	{"cluster.health_check.verify_cluster", "Health checks that checked the service name of the host."},
	{"cluster.health_check.healthy", "Hosts the health checker finds healthy."},
	{"cluster.health_check.degraded", "Hosts the health checker finds degraded."},
	{"cluster.outlier_detection.ejections_active", "Hosts currently ejected by outlier detection."},
	{"cluster.outlier_detection.ejections_overflow", "Ejections not made because too many hosts were already ejected."},
	{"cluster.outlier_detection.ejections_enforced_total", "Ejections enforced, for any reason."},
	{"cluster.outlier_detection.ejections_detected_consecutive_5xx", "Hosts detected as outliers by consecutive 5xx answers."},
	{"cluster.circuit_breakers.*.cx_open", "1 while the connection circuit breaker of the priority is open."},
	{"cluster.circuit_breakers.*.cx_pool_open", "1 while the connection-pool circuit breaker of the priority is open."},
	{"cluster.circuit_breakers.*.rq_pending_open", "1 while the pending-request circuit breaker of the priority is open."},
	{"cluster.circuit_breakers.*.rq_open", "1 while the request circuit breaker of the priority is open."},
	{"cluster.circuit_breakers.*.rq_retry_open", "1 while the retry circuit breaker of the priority is open."},
	{"cluster.circuit_breakers.*.remaining_cx", "Connections left before the priority's circuit breaker opens."},
	{"cluster.circuit_breakers.*.remaining_pending", "Pending requests left before the priority's circuit breaker opens."},
	{"cluster.circuit_breakers.*.remaining_rq", "Requests left before the priority's circuit breaker opens."},
	{"cluster.circuit_breakers.*.remaining_retries", "Retries left before the priority's circuit breaker opens."},
	{"cluster.outlier_detection.ejections_total", "Consecutive-5xx and success-rate ejections that max_ejection_percent allowed, enforced or not (deprecated)."},
	{"cluster.outlier_detection.ejections_consecutive_5xx", "Consecutive-5xx ejections detected (deprecated)."},
	{"cluster.outlier_detection.ejections_success_rate", "Success-rate outliers detected (deprecated)."},
	{"cluster.outlier_detection.ejections_enforced_consecutive_5xx", "Hosts outlier detection ejected for consecutive 5xx."},
	{"cluster.outlier_detection.ejections_detected_consecutive_gateway_failure", "Hosts outlier detection found with consecutive gateway failures."},
	{"cluster.outlier_detection.ejections_enforced_consecutive_gateway_failure", "Hosts outlier detection ejected for consecutive gateway failures."},
	{"cluster.outlier_detection.ejections_detected_success_rate", "Hosts outlier detection found with a success rate below the cluster's threshold."},
	{"cluster.outlier_detection.ejections_enforced_success_rate", "Hosts outlier detection ejected for a success rate below the cluster's threshold."},
	{"cluster.outlier_detection.ejections_detected_failure_percentage", "Hosts outlier detection found with a failure percentage at the threshold."},
	{"cluster.outlier_detection.ejections_enforced_failure_percentage", "Hosts outlier detection ejected for a failure percentage at the threshold."},
	{"cluster.outlier_detection.ejections_detected_consecutive_local_origin_failure", "Hosts outlier detection found with consecutive local-origin failures."},
	{"cluster.outlier_detection.ejections_enforced_consecutive_local_origin_failure", "Hosts outlier detection ejected for consecutive local-origin failures."},
	{"cluster.outlier_detection.ejections_detected_local_origin_success_rate", "Hosts outlier detection found with a local-origin success rate below the cluster's threshold."},
	{"cluster.outlier_detection.ejections_enforced_local_origin_success_rate", "Hosts outlier detection ejected for a local-origin success rate below the cluster's threshold."},
	{"cluster.outlier_detection.ejections_detected_local_origin_failure_percentage", "Hosts outlier detection found with a local-origin failure percentage at the threshold."},
	{"cluster.outlier_detection.ejections_enforced_local_origin_failure_percentage", "Hosts outlier detection ejected for a local-origin failure percentage at the threshold."},
}

// httpHelp describes the HTTP connection manager's, the router's, the
// HTTP/2 codec's and the HTTP filters' stats.
var httpHelp = [][2]string{
	{"http.downstream_cx_total", "Downstream connections the connection manager handled."},
	{"http.downstream_cx_ssl_total", "Downstream TLS connections the connection manager handled."},
	{"http.downstream_cx_http1_total", "Downstream HTTP/1.1 connections."},
	{"http.downstream_cx_http2_total", "Downstream HTTP/2 connections."},
	{"http.downstream_cx_http3_total", "Downstream HTTP/3 connections."},
	{"http.downstream_cx_upgrades_total", "Downstream connections upgraded (WebSocket and other upgrades)."},
	{"http.downstream_cx_active", "Downstream connections currently open."},
	{"http.downstream_cx_ssl_active", "Downstream TLS connections currently open."},
	{"http.downstream_cx_http1_active", "Downstream HTTP/1.1 connections currently open."},
	{"http.downstream_cx_http2_active", "Downstream HTTP/2 connections currently open."},
	{"http.downstream_cx_http3_active", "Downstream HTTP/3 connections currently open."},
	{"http.downstream_cx_upgrades_active", "Upgraded downstream connections currently open."},
	{"http.downstream_cx_destroy", "Downstream connections closed."},
	{"http.downstream_cx_destroy_remote", "Downstream connections closed by the client."},
	{"http.downstream_cx_destroy_local", "Downstream connections closed by the proxy."},
	{"http.downstream_cx_destroy_active_rq", "Downstream connections closed with a request in flight."},
	{"http.downstream_cx_destroy_local_active_rq", "Downstream connections closed by the proxy with a request in flight."},
	{"http.downstream_cx_destroy_remote_active_rq", "Downstream connections closed by the client with a request in flight."},
	{"http.downstream_cx_protocol_error", "Downstream connections closed on a protocol error."},
	{"http.downstream_cx_length_ms", "Lifetime of downstream connections, in milliseconds."},
	{"http.downstream_cx_rx_bytes_total", "Bytes received from downstream connections."},
	{"http.downstream_cx_rx_bytes_buffered", "Bytes received from downstream connections and buffered now."},
	{"http.downstream_cx_tx_bytes_total", "Bytes sent to downstream connections."},
	{"http.downstream_cx_tx_bytes_buffered", "Bytes sent to downstream connections and buffered now."},
	{"http.downstream_cx_drain_close", "Downstream connections closed because of draining."},
	{"http.downstream_cx_idle_timeout", "Downstream connections closed after their idle timeout."},
	{"http.downstream_cx_max_duration_reached", "Downstream connections closed on reaching their maximum duration."},
	{"http.downstream_cx_max_requests_reached", "Downstream connections closed after their maximum number of requests."},
	{"http.downstream_cx_overload_disable_keepalive", "Downstream connections not kept alive because of overload."},
	{"http.downstream_cx_delayed_close_timeout", "Downstream connections closed when their delayed-close timeout ran out."},
	{"http.downstream_flow_control_paused_reading_total", "Times reading from a downstream connection paused for flow control."},
	{"http.downstream_flow_control_resumed_reading_total", "Times reading from a downstream connection resumed after flow control."},
	{"http.downstream_rq_total", "Downstream requests received."},
	{"http.downstream_rq_http1_total", "Downstream HTTP/1.1 requests."},
	{"http.downstream_rq_http2_total", "Downstream HTTP/2 requests."},
	{"http.downstream_rq_http3_total", "Downstream HTTP/3 requests."},
	{"http.downstream_rq_active", "Downstream requests currently in flight."},
	{"http.downstream_rq_completed", "Downstream requests that got a complete response."},
	{"http.downstream_rq_xx", "Responses to downstream requests by status class (response_code_class label)."},
	{"http.downstream_rq_time", "Time from a request's start until its response's end, in milliseconds."},
	{"http.downstream_rq_response_before_rq_complete", "Responses sent before their request was complete."},
	{"http.downstream_rq_rx_reset", "Downstream requests reset by the client."},
	{"http.downstream_rq_tx_reset", "Downstream requests reset by the proxy."},
	{"http.downstream_rq_non_relative_path", "Downstream requests with an absolute-form or otherwise non-relative path."},
	{"http.downstream_rq_too_large", "Downstream requests refused because their body was too large to buffer."},
	{"http.downstream_rq_failed_path_normalization", "Downstream requests refused because their path could not be normalized."},
	{"http.downstream_rq_redirected_with_normalized_path", "Downstream requests redirected to their normalized path."},
	{"http.downstream_rq_ws_on_non_ws_route", "Upgrade requests refused because their route does not allow upgrades."},
	{"http.downstream_rq_idle_timeout", "Downstream requests closed after their stream idle timeout."},
	{"http.downstream_rq_overload_close", "Downstream requests refused because of overload."},
	{"http.downstream_rq_timeout", "Downstream requests closed because their request timeout ran out."},
	{"http.downstream_rq_header_timeout", "Downstream requests closed because their headers did not arrive in time."},
	{"http.downstream_rq_max_duration_reached", "Downstream requests closed on reaching their maximum duration."},
	{"http.downstream_rq_too_many_premature_resets", "Downstream connections closed for resetting too many streams early."},
	{"http.rs_too_large", "Responses that could not be sent because their body was too large to buffer."},
	{"http.no_route", "Requests that matched no route."},
	{"http.no_cluster", "Requests whose route named a cluster that does not exist."},
	{"http.rq_total", "Requests the router handled."},
	{"http.rq_direct_response", "Requests answered by a direct_response route."},
	{"http.rq_redirect", "Requests answered by a redirect route."},
	{"http.rq_reset_after_downstream_response_started", "Requests reset after their response had started."},
	{"http.tracing.random_sampling", "Requests traced because of random sampling."},
	{"http.tracing.service_forced", "Requests traced because the x-request-id forced it."},
	{"http.tracing.client_enabled", "Requests traced because the client asked for it."},
	{"http.tracing.not_traceable", "Requests not traced because their request id is not traceable."},
	{"http.tracing.health_check", "Requests not traced because they are health checks."},
	{"http.user_agent.downstream_cx_total", "Downstream connections by user agent."},
	{"http.user_agent.downstream_cx_destroy_remote_active_rq", "Downstream connections closed by the client with a request in flight, by user agent."},
	{"http.user_agent.downstream_rq_total", "Downstream requests by user agent."},
	{"http.rds.config_reload", "Route configurations loaded from discovery."},
	{"http.rds.update_empty", "Empty route configuration updates received."},

	// The virtual hosts' and routes' request stats.
	{"vhost.vcluster.upstream_rq_total", "Requests to the virtual cluster."},
	{"vhost.vcluster.upstream_rq_completed", "Requests to the virtual cluster that completed."},
	{"vhost.vcluster.upstream_rq_timeout", "Requests to the virtual cluster that timed out."},
	{"vhost.vcluster.upstream_rq_time", "Request time of the virtual cluster, in milliseconds."},
	{"vhost.vcluster.upstream_rq", "Responses of the virtual cluster by status code."},
	{"vhost.vcluster.upstream_rq_xx", "Responses of the virtual cluster by status class."},
	{"vhost.vcluster.upstream_rq_retry", "Retries of requests to the virtual cluster."},
	{"vhost.vcluster.upstream_rq_retry_limit_exceeded", "Requests to the virtual cluster that used all their retries."},
	{"vhost.vcluster.upstream_rq_retry_overflow", "Retries to the virtual cluster refused by a circuit breaker."},
	{"vhost.vcluster.upstream_rq_retry_success", "Retries to the virtual cluster that succeeded."},
	{"vhost.route.upstream_rq_total", "Requests to the route."},
	{"vhost.route.upstream_rq_completed", "Requests to the route that completed."},
	{"vhost.route.upstream_rq_timeout", "Requests to the route that timed out."},
	{"vhost.route.upstream_rq_time", "Request time of the route, in milliseconds."},
	{"vhost.route.upstream_rq", "Responses of the route by status code."},
	{"vhost.route.upstream_rq_xx", "Responses of the route by status class."},
	{"vhost.route.upstream_rq_retry", "Retries of requests to the route."},
	{"vhost.route.upstream_rq_retry_limit_exceeded", "Requests to the route that used all their retries."},
	{"vhost.route.upstream_rq_retry_overflow", "Retries to the route refused by a circuit breaker."},
	{"vhost.route.upstream_rq_retry_success", "Retries to the route that succeeded."},

	// HTTP/2 codec stats, downstream (http2.) and upstream
	// (cluster.<name>.http2.).
	{"**.http2.rx_reset", "HTTP/2 streams reset by the peer."},
	{"**.http2.tx_reset", "HTTP/2 streams reset by the proxy."},
	{"**.http2.goaway_sent", "HTTP/2 GOAWAY frames sent."},
	{"**.http2.header_overflow", "HTTP/2 connections reset because a header block was too large."},
	{"**.http2.headers_cb_no_stream", "HTTP/2 header frames that arrived for no known stream."},
	{"**.http2.inbound_empty_frames_flood", "HTTP/2 connections closed for receiving too many empty frames."},
	{"**.http2.inbound_priority_frames_flood", "HTTP/2 connections closed for receiving too many PRIORITY frames."},
	{"**.http2.inbound_window_update_frames_flood", "HTTP/2 connections closed for receiving too many WINDOW_UPDATE frames."},
	{"**.http2.outbound_flood", "HTTP/2 connections closed because too many frames waited to be sent."},
	{"**.http2.outbound_control_flood", "HTTP/2 connections closed because too many control frames waited to be sent."},
	{"**.http2.outbound_frames_active", "HTTP/2 frames waiting to be sent."},
	{"**.http2.outbound_control_frames_active", "HTTP/2 control frames waiting to be sent."},
	{"**.http2.pending_send_bytes", "Bytes of HTTP/2 data waiting for flow-control window."},
	{"**.http2.streams_active", "HTTP/2 streams currently open."},
	{"**.http2.deferred_stream_close", "HTTP/2 streams whose close waits for buffered data."},
	{"**.http2.rx_messaging_error", "HTTP/2 frames refused for breaking the protocol's messaging rules."},
	{"**.http2.trailers", "HTTP/2 trailers received."},
	{"**.http2.metadata_empty_frames", "HTTP/2 METADATA frames received empty."},
	{"**.http2.tx_flush_timeout", "HTTP/2 streams reset because their data could not be sent in time."},
	{"**.http2.keepalive_timeout", "HTTP/2 connections closed because a keepalive PING went unanswered."},
	{"**.http2.stream_refused_errors", "HTTP/2 streams the peer refused."},
	{"**.http2.dropped_headers_with_underscores", "Request headers dropped because their name has an underscore."},
	{"**.http2.requests_rejected_with_underscores_in_headers", "Requests refused because a header name has an underscore."},
	{"**.http1.dropped_headers_with_underscores", "Request headers dropped because their name has an underscore."},
	{"**.http1.requests_rejected_with_underscores_in_headers", "Requests refused because a header name has an underscore."},
	{"**.http1.metadata_not_supported_error", "Metadata that HTTP/1 could not carry and was dropped."},
	{"**.http1.response_flood", "HTTP/1 connections closed because too many responses waited to be sent."},

	// HTTP filters.
	{"http.fault.delays_injected", "Requests the fault filter delayed."},
	{"http.fault.aborts_injected", "Requests the fault filter aborted."},
	{"http.fault.response_rl_injected", "Responses the fault filter rate-limited."},
	{"http.fault.faults_overflow", "Faults not injected because max_active_faults was reached."},
	{"http.fault.active_faults", "Faults currently being injected."},
	{"http_local_rate_limit.enabled", "Requests the local rate limit was enabled for."},
	{"http_local_rate_limit.enforced", "Requests the local rate limit was enforced for."},
	{"http_local_rate_limit.rate_limited", "Requests over the local rate limit."},
	{"http_local_rate_limit.ok", "Requests within the local rate limit."},
	{"**.ext_authz.ok", "Requests the authorization service allowed."},
	{"**.ext_authz.denied", "Requests the authorization service denied."},
	{"**.ext_authz.error", "Authorization checks that failed to get an answer."},
	{"**.ext_authz.disabled", "Requests let through because the filter was disabled for them."},
	{"**.ext_authz.failure_mode_allowed", "Requests let through after a failed check, as failure_mode_allow asks."},
	{"cluster.grpc-web.**.success", "gRPC-Web calls that ended with grpc-status 0."},
	{"cluster.grpc-web.**.failure", "gRPC-Web calls that ended with a grpc-status other than 0."},
	{"cluster.grpc-web.**.total", "gRPC-Web calls."},
	{"cluster.grpc-web.**.*", "gRPC-Web calls by the grpc-status they ended with (the last name segment)."},
	{"http.cors.origin_valid", "CORS requests from an allowed origin."},
	{"http.cors.origin_invalid", "CORS requests from an origin that is not allowed."},
	{"http.health_check.request", "Requests answered by the health_check filter."},
	{"http.compressor.**.compressed", "Responses compressed."},
	{"http.compressor.**.not_compressed", "Responses not compressed."},
	{"http.compressor.**.not_compressed_etag", "Responses not compressed because of their strong ETag."},
	{"http.compressor.**.no_accept_header", "Requests without an Accept-Encoding header."},
	{"http.compressor.**.header_identity", "Requests whose Accept-Encoding asked for identity."},
	{"http.compressor.**.header_compressor_used", "Requests whose Accept-Encoding chose this compressor."},
	{"http.compressor.**.header_compressor_overshadowed", "Requests whose Accept-Encoding preferred another compressor."},
	{"http.compressor.**.header_wildcard", "Requests whose Accept-Encoding was a wildcard."},
	{"http.compressor.**.header_not_valid", "Requests whose Accept-Encoding could not be parsed."},
	{"http.compressor.**.content_length_too_small", "Responses too small to compress."},
	{"http.compressor.**.total_uncompressed_bytes", "Bytes before compression."},
	{"http.compressor.**.total_compressed_bytes", "Bytes after compression."},
	{"http.decompressor.**.decompressed", "Messages decompressed."},
	{"http.decompressor.**.not_decompressed", "Messages not decompressed."},
	{"http.decompressor.**.total_uncompressed_bytes", "Bytes after decompression."},
	{"http.decompressor.**.total_compressed_bytes", "Bytes before decompression."},
	{"http.**.zlib_errno", "zlib errors of kind Z_ERRNO."},
	{"http.**.zlib_stream_error", "zlib errors of kind Z_STREAM_ERROR."},
	{"http.**.zlib_data_error", "zlib errors of kind Z_DATA_ERROR."},
	{"http.**.zlib_mem_error", "zlib errors of kind Z_MEM_ERROR."},
	{"http.**.zlib_buf_error", "zlib errors of kind Z_BUF_ERROR."},
	{"http.**.zlib_version_error", "zlib errors of kind Z_VERSION_ERROR."},
	{"http.**.brotli_error", "Brotli decoding errors."},
	{"http.**.brotli_output_overflow", "Brotli outputs over the configured limit."},
	{"http.**.brotli_redundant_input", "Brotli inputs with data after the end of the stream."},
	{"http.**.zstd_generic_error", "Zstandard decoding errors."},
	{"http.**.zstd_dictionary_error", "Zstandard dictionary errors."},
	{"http.**.zstd_checksum_wrong_error", "Zstandard checksum mismatches."},
	{"http.**.zstd_memory_error", "Zstandard memory errors."},
}

// listenerHelp describes the listeners' and the listener manager's stats.
var listenerHelp = [][2]string{
	{"listener.**.downstream_cx_total", "Connections the listener accepted."},
	{"listener.**.downstream_cx_active", "Connections of the listener currently open."},
	{"listener.**.downstream_cx_destroy", "Connections of the listener that were closed."},
	{"listener.**.downstream_cx_length_ms", "Lifetime of the listener's connections, in milliseconds."},
	{"listener.**.downstream_cx_overflow", "Connections refused by the listener's connection limit."},
	{"listener.**.downstream_cx_overload_reject", "Connections refused because of overload."},
	{"listener.**.downstream_global_cx_overflow", "Connections refused by the global connection limit."},
	{"listener.**.downstream_cx_transport_socket_connect_timeout", "Connections closed because their transport handshake timed out."},
	{"listener.**.downstream_pre_cx_active", "Connections running the listener filters now."},
	{"listener.**.downstream_pre_cx_timeout", "Connections closed because the listener filters timed out."},
	{"listener.**.downstream_listener_filter_error", "Connections closed on a listener filter error."},
	{"listener.**.downstream_listener_filter_remote_close", "Connections closed by the client while the listener filters ran."},
	{"listener.**.no_filter_chain_match", "Connections that matched no filter chain."},
	{"listener.**.http.downstream_rq_xx", "Responses of the listener's connection manager by status class."},
	{"listener.**.http.downstream_rq_completed", "Requests of the listener's connection manager that completed."},
	{"listener.**.ssl.connection_error", "TLS handshakes that failed."},
	{"listener.**.ssl.handshake", "TLS handshakes that succeeded."},
	{"listener.**.ssl.no_certificate", "TLS connections without a client certificate."},
	{"listener.**.ssl.session_reused", "TLS handshakes that resumed a session."},
	{"listener.**.ssl.fail_verify_no_cert", "TLS handshakes refused because the client sent no certificate."},
	{"listener.**.ssl.fail_verify_error", "TLS handshakes refused because the client's certificate chain did not verify."},
	{"listener.**.ssl.fail_verify_san", "TLS handshakes refused because no subject alt name matched."},
	{"listener.**.ssl.fail_verify_cert_hash", "TLS handshakes refused because the certificate's hash or SPKI was not allowed."},
	{"listener.**.ssl.ciphers.**", "TLS handshakes by negotiated cipher suite."},
	{"listener.**.ssl.versions.**", "TLS handshakes by protocol version."},
	{"listener.**.ssl.curves.**", "TLS handshakes by key exchange group."},
	{"cluster.**.ssl.connection_error", "Upstream TLS handshakes that failed."},
	{"cluster.**.ssl.handshake", "Upstream TLS handshakes that succeeded."},
	{"cluster.**.ssl.no_certificate", "Upstream TLS connections whose server sent no certificate."},
	{"cluster.**.ssl.session_reused", "Upstream TLS handshakes that resumed a session."},
	{"cluster.**.ssl.fail_verify_no_cert", "Upstream TLS handshakes refused because the server sent no certificate."},
	{"cluster.**.ssl.fail_verify_error", "Upstream TLS handshakes refused because the server's certificate chain did not verify."},
	{"cluster.**.ssl.fail_verify_san", "Upstream TLS handshakes refused because no subject alt name of the server matched."},
	{"cluster.**.ssl.fail_verify_cert_hash", "Upstream TLS handshakes refused because the server certificate's hash or SPKI was not allowed."},
	{"cluster.**.ssl.ciphers.**", "Upstream TLS handshakes by negotiated cipher suite."},
	{"cluster.**.ssl.versions.**", "Upstream TLS handshakes by protocol version."},
	{"cluster.**.ssl.curves.**", "Upstream TLS handshakes by key exchange group."},
	{"tls_inspector.tls_found", "Connections whose first bytes were a TLS ClientHello."},
	{"tls_inspector.tls_not_found", "Connections whose first bytes were not TLS."},
	{"tls_inspector.sni_found", "ClientHellos with a server name."},
	{"tls_inspector.sni_not_found", "ClientHellos without a server name."},
	{"tls_inspector.alpn_found", "ClientHellos offering application protocols."},
	{"tls_inspector.alpn_not_found", "ClientHellos offering no application protocol."},
	{"tls_inspector.client_hello_too_large", "Connections closed because their ClientHello was larger than 64 KiB."},
	{"tls_inspector.bytes_processed", "Bytes of each ClientHello the tls_inspector read, or of the non-TLS bytes it looked at."},
	{"listener.**.proxy_proto.**", "PROXY protocol headers seen, by outcome and version."},
	{"listener_manager.listener_added", "Listeners added, statically or by discovery."},
	{"listener_manager.listener_modified", "Listeners changed by discovery."},
	{"listener_manager.listener_removed", "Listeners removed by discovery."},
	{"listener_manager.listener_stopped", "Listeners stopped (by /drain_listeners or removal)."},
	{"listener_manager.listener_create_success", "Listeners set up on the workers."},
	{"listener_manager.listener_create_failure", "Listeners that failed to be set up on the workers."},
	{"listener_manager.listener_in_place_updated", "Listeners updated in place, keeping their sockets."},
	{"listener_manager.total_listeners_active", "Listeners currently active."},
	{"listener_manager.total_listeners_draining", "Listeners currently draining."},
	{"listener_manager.total_listeners_warming", "Listeners currently warming."},
	{"listener_manager.total_filter_chains_draining", "Filter chains currently draining."},
	{"listener_manager.workers_started", "1 once the workers have started, else 0."},
}

// subscriptionHelp describes a discovery subscription's stats.
var subscriptionHelp = [][2]string{
	{"update_attempt", "Configuration fetches and updates attempted."},
	{"update_success", "Configuration updates accepted."},
	{"update_failure", "Configuration fetches that failed (network or file errors)."},
	{"update_rejected", "Configuration updates rejected as invalid."},
	{"update_time", "Time of the last accepted update, in milliseconds since the epoch."},
	{"update_duration", "Time to apply an accepted update, in milliseconds."},
	{"init_fetch_timeout", "Initial fetches that timed out."},
	{"version", "Hash of the content of the last accepted update."},
	{"version_text", "Version of the last accepted update, as the text_value label."},
}

// otherHelp describes the stats of network filters, access logs,
// tracers, the DNS resolver and the overload manager.
var otherHelp = [][2]string{
	{"tcp.downstream_cx_total", "Connections the TCP proxy handled."},
	{"tcp.downstream_cx_no_route", "Connections that matched no cluster."},
	{"tcp.downstream_cx_rx_bytes_total", "Bytes received from downstream."},
	{"tcp.downstream_cx_rx_bytes_buffered", "Bytes received from downstream and buffered now."},
	{"tcp.downstream_cx_tx_bytes_total", "Bytes sent downstream."},
	{"tcp.downstream_cx_tx_bytes_buffered", "Bytes waiting to be sent downstream."},
	{"tcp.downstream_flow_control_paused_reading_total", "Times reading from downstream paused for flow control."},
	{"tcp.downstream_flow_control_resumed_reading_total", "Times reading from downstream resumed after flow control."},
	{"tcp.idle_timeout", "Connections closed after their idle timeout."},
	{"tcp.max_downstream_connection_duration", "Connections closed on reaching their maximum duration."},
	{"tcp.upstream_flush_total", "Connections that kept flushing data upstream after downstream closed."},
	{"tcp.upstream_flush_active", "Connections flushing data upstream after downstream closed now."},
	{"tcp.on_demand_cluster_attempt", "On-demand cluster lookups attempted."},
	{"connection_limit.limited_connections", "Connections closed for being over the connection limit."},
	{"connection_limit.active_connections", "Connections the connection limit counts as open now."},
	{"local_rate_limit.rate_limited", "Connections closed because the local rate limit had no token."},
	{"access_logs.**.logs_written", "Access log entries written."},
	{"access_logs.**.logs_dropped", "Access log entries dropped."},
	{"tracing.*.spans_sent", "Spans sent to the tracer's collector."},
	{"tracing.*.spans_dropped", "Spans dropped."},
	{"tracing.*.reports_sent", "Batches of spans sent to the collector."},
	{"tracing.*.reports_dropped", "Batches of spans the collector did not accept."},
	{"tracing.*.reports_failed", "Batches of spans that could not be sent."},
	{"tracing.*.timer_flushed", "Batches of spans sent because the flush interval passed."},
	{"dns.cares.resolve_total", "DNS resolutions started."},
	{"dns.cares.pending_resolutions", "DNS resolutions in progress."},
	{"dns.cares.not_found", "DNS resolutions that found no address."},
	{"dns.cares.timeouts", "DNS resolutions that timed out."},
	{"dns.cares.get_addr_failure", "DNS resolutions that failed."},
	{"overload.refresh_interval_delay", "Delay of the overload manager's refresh beyond its interval, in milliseconds."},
	{"overload.**.active", "1 while the overload action is active, else 0."},
	{"overload.**.scale_percent", "How far the overload action is scaled, in percent."},
	{"overload.**.shrink_count", "Times the overload action asked to shrink memory use."},
	{"overload.**.pressure", "Resource pressure the monitor reports, in percent."},
	{"overload.**.failed_updates", "Resource monitor updates that failed."},
	{"overload.**.skipped_updates", "Resource monitor updates skipped because one was still running."},
}
