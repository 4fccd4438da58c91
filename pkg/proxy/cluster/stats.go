package cluster

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster/dnscluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// extraStats are the cluster stats of Envoy's that the shared ClusterStats do
// not carry: the load balancer's and the pools' own.
type extraStats struct {
	// lbHealthyPanic counts picks made in panic mode.
	lbHealthyPanic *stats.Counter
	// noneHealthy counts requests that found no host to go to.
	noneHealthy *stats.Counter
	// idleTimeout counts connections closed after idle_timeout.
	idleTimeout *stats.Counter
	// maxRequests counts connections closed after
	// max_requests_per_connection.
	maxRequests *stats.Counter
	// cxOverflow counts connections the max_connections breaker did not
	// let open; rqPendingOverflow requests the max_pending_requests or
	// max_requests breaker refused.
	cxOverflow        *stats.Counter
	rqPendingOverflow *stats.Counter
	// rqCancelled counts pending requests whose client went away or whose
	// route timeout passed; rqPendingFailureEject those whose connection
	// failed to open.
	rqCancelled           *stats.Counter
	rqPendingFailureEject *stats.Counter
	// bindErrors counts connections that could not bind their source
	// address (original_src without CAP_NET_ADMIN, an address the kernel
	// refuses).
	bindErrors *stats.Counter
	// maxHostWeight is the largest host weight of the cluster.
	maxHostWeight *stats.Gauge
	// update are the config update counters every cluster has in Envoy;
	// DNS resolutions move them (update_empty and the assignment_* ones
	// are EDS's).
	update dnscluster.Stats
}

func newExtraStats(scope stats.Scope) extraStats {
	e := extraStats{
		lbHealthyPanic:        scope.Counter("lb_healthy_panic"),
		noneHealthy:           scope.Counter("upstream_cx_none_healthy"),
		idleTimeout:           scope.Counter("upstream_cx_idle_timeout"),
		maxRequests:           scope.Counter("upstream_cx_max_requests"),
		maxHostWeight:         scope.Gauge("max_host_weight"),
		cxOverflow:            scope.Counter("upstream_cx_overflow"),
		rqPendingOverflow:     scope.Counter("upstream_rq_pending_overflow"),
		rqCancelled:           scope.Counter("upstream_rq_cancelled"),
		rqPendingFailureEject: scope.Counter("upstream_rq_pending_failure_eject"),
		bindErrors:            scope.Counter("bind_errors"),
		update: dnscluster.Stats{
			UpdateAttempt:   scope.Counter("update_attempt"),
			UpdateSuccess:   scope.Counter("update_success"),
			UpdateFailure:   scope.Counter("update_failure"),
			UpdateNoRebuild: scope.Counter("update_no_rebuild"),
		},
	}
	for _, name := range []string{"update_empty", "assignment_stale", "assignment_timeout_received", "assignment_use_cached"} {
		scope.Counter(name)
	}
	// Envoy creates every stat of its cluster traffic stats in every
	// cluster. These stay at zero here: their features are refused or
	// absent (HTTP/3 and 0-RTT, max_connection_pools, the cluster's
	// max_connection_duration, internal redirects, maintenance mode,
	// upstream read pauses, which Go's blocking reads do not have), or
	// another part counts them by the same name (the TCP proxy's
	// attempts, the ORIGINAL_DST cluster's invalid headers).
	for _, name := range []string{
		"original_dst_host_invalid",
		"upstream_cx_connect_attempts_exceeded",
		"upstream_cx_connect_with_0_rtt",
		"upstream_cx_http3_total",
		"upstream_cx_max_duration_reached",
		"upstream_cx_pool_overflow",
		"upstream_flow_control_backed_up_total",
		"upstream_flow_control_drained_total",
		"upstream_flow_control_paused_reading_total",
		"upstream_flow_control_resumed_reading_total",
		"upstream_internal_redirect_failed_total",
		"upstream_internal_redirect_succeeded_total",
		"upstream_rq_0rtt",
		"upstream_rq_maintenance_mode",
		"upstream_http3_broken",
	} {
		scope.Counter(name)
	}
	scope.Gauge("version")
	scope.Gauge("warming_state")
	return e
}
