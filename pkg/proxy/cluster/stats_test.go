package cluster

import (
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestClusterStatsAllExist: a new cluster has every stat Envoy creates in
// each cluster, of the same kind, before any traffic (dashboards and
// alerts read them at zero).
func TestClusterStatsAllExist(t *testing.T) {
	// The stats Envoy creates in every cluster: its cluster traffic, load
	// balancer, endpoint and config update stats (envoy/upstream/upstream.h),
	// by kind.
	envoyClusterStats := map[stats.Kind][]string{
		stats.KindCounter: {
			"bind_errors", "original_dst_host_invalid", "retry_or_shadow_abandoned",
			"upstream_cx_close_notify", "upstream_cx_connect_attempts_exceeded",
			"upstream_cx_connect_fail", "upstream_cx_connect_timeout", "upstream_cx_connect_with_0_rtt",
			"upstream_cx_destroy", "upstream_cx_destroy_local", "upstream_cx_destroy_local_with_active_rq",
			"upstream_cx_destroy_remote", "upstream_cx_destroy_remote_with_active_rq",
			"upstream_cx_destroy_with_active_rq", "upstream_cx_http1_total", "upstream_cx_http2_total",
			"upstream_cx_http3_total", "upstream_cx_idle_timeout", "upstream_cx_max_duration_reached",
			"upstream_cx_max_requests", "upstream_cx_none_healthy", "upstream_cx_overflow",
			"upstream_cx_pool_overflow", "upstream_cx_protocol_error", "upstream_cx_rx_bytes_total",
			"upstream_cx_total", "upstream_cx_tx_bytes_total",
			"upstream_flow_control_backed_up_total", "upstream_flow_control_drained_total",
			"upstream_flow_control_paused_reading_total", "upstream_flow_control_resumed_reading_total",
			"upstream_internal_redirect_failed_total", "upstream_internal_redirect_succeeded_total",
			"upstream_rq_cancelled", "upstream_rq_completed", "upstream_rq_maintenance_mode",
			"upstream_rq_max_duration_reached", "upstream_rq_pending_failure_eject",
			"upstream_rq_pending_overflow", "upstream_rq_pending_total", "upstream_rq_0rtt",
			"upstream_rq_per_try_timeout", "upstream_rq_per_try_idle_timeout", "upstream_rq_retry",
			"upstream_rq_retry_backoff_exponential", "upstream_rq_retry_backoff_ratelimited",
			"upstream_rq_retry_limit_exceeded", "upstream_rq_retry_overflow", "upstream_rq_retry_success",
			"upstream_rq_rx_reset", "upstream_rq_timeout", "upstream_rq_total", "upstream_rq_tx_reset",
			"upstream_http3_broken",
			"membership_change",
			"lb_healthy_panic", "lb_local_cluster_not_ok", "lb_recalculate_zone_structures",
			"lb_subsets_created", "lb_subsets_fallback", "lb_subsets_fallback_panic", "lb_subsets_removed",
			"lb_subsets_selected", "lb_zone_cluster_too_small", "lb_zone_no_capacity_left",
			"lb_zone_routing_all_directly", "lb_zone_routing_cross_zone", "lb_zone_routing_sampled",
			"update_attempt", "update_success", "update_failure", "update_empty", "update_no_rebuild",
			"assignment_stale", "assignment_timeout_received", "assignment_use_cached",
		},
		stats.KindGauge: {
			"upstream_cx_active", "upstream_cx_rx_bytes_buffered", "upstream_cx_tx_bytes_buffered",
			"upstream_rq_active", "upstream_rq_pending_active",
			"max_host_weight", "membership_degraded", "membership_excluded", "membership_healthy",
			"membership_total", "lb_subsets_active", "version", "warming_state",
		},
		stats.KindHistogram: {"upstream_cx_connect_ms", "upstream_cx_length_ms", "upstream_rq_per_cx"},
	}
	_, store, _ := newTestManager(t, clusterFor("", 1))
	have := map[string]stats.Kind{}
	err := store.Visit(stats.VisitOptions{}, func(st *stats.Stat) error {
		if name, ok := strings.CutPrefix(string(st.Name), "cluster.up."); ok {
			have[name] = st.Kind
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for kind, names := range envoyClusterStats {
		for _, name := range names {
			got, ok := have[name]
			switch {
			case !ok:
				t.Errorf("cluster.up.%s does not exist", name)
			case got != kind:
				t.Errorf("cluster.up.%s is a %v, want a %v", name, got, kind)
			}
		}
	}
}
