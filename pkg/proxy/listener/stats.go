package listener

import (
	"strconv"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// listenerStats are Envoy's per-listener stats (scope "listener.<address or
// stat_prefix>."). They are all created with the listener, so /stats lists
// them at zero as Envoy does.
type listenerStats struct {
	cxTotal            *stats.Counter
	cxDestroy          *stats.Counter
	noFilterChainMatch *stats.Counter
	// cxOverflow counts connections refused by the listener's limit,
	// cxOverloadReject those reject_incoming_connections closed, and
	// globalCxOverflow those refused by the global limit.
	cxOverflow       *stats.Counter
	cxOverloadReject *stats.Counter
	globalCxOverflow *stats.Counter
	cxActive         *stats.Gauge
	cxLengthMs       *stats.Histogram
	// The listener filters' stats: connections in them (preCxActive),
	// and those they ended at their timeout, at the peer's close or at
	// a read error.
	preCxActive   *stats.Gauge
	preCxTimeout  *stats.Counter
	lfRemoteClose *stats.Counter
	lfError       *stats.Counter
	// cxTransportTimeout counts TLS handshakes cut by the filter chain's
	// transport_socket_connect_timeout.
	cxTransportTimeout *stats.Counter
}

// newListenerStats creates the stats of a listener under scope.
func newListenerStats(scope stats.Scope) listenerStats {
	return listenerStats{
		cxTransportTimeout: scope.Counter("downstream_cx_transport_socket_connect_timeout"),
		cxTotal:            scope.Counter("downstream_cx_total"),
		cxDestroy:          scope.Counter("downstream_cx_destroy"),
		noFilterChainMatch: scope.Counter("no_filter_chain_match"),
		cxOverflow:         scope.Counter("downstream_cx_overflow"),
		cxOverloadReject:   scope.Counter("downstream_cx_overload_reject"),
		globalCxOverflow:   scope.Counter("downstream_global_cx_overflow"),
		cxActive:           scope.Gauge("downstream_cx_active"),
		cxLengthMs:         scope.Histogram("downstream_cx_length_ms", stats.UnitMilliseconds),
		preCxActive:        scope.Gauge("downstream_pre_cx_active"),
		preCxTimeout:       scope.Counter("downstream_pre_cx_timeout"),
		lfRemoteClose:      scope.Counter("downstream_listener_filter_remote_close"),
		lfError:            scope.Counter("downstream_listener_filter_error"),
	}
}

// workerStats are the per-worker listener stats,
// "listener.<address>.worker_<n>.downstream_cx_{total,active}". With
// exact_balance the balancer reads downstream_cx_active.
type workerStats struct {
	cxTotal  *stats.Counter
	cxActive *stats.Gauge
}

func newWorkerStats(scope stats.Scope, worker int) workerStats {
	ws := scope.Scope("worker_" + strconv.Itoa(worker) + ".")
	return workerStats{cxTotal: ws.Counter("downstream_cx_total"), cxActive: ws.Gauge("downstream_cx_active")}
}

// ManagerStats are Envoy's listener manager stats ("listener_manager.").
// The listeners report their workers and stops here; adding, modifying,
// removing and the totals are counted by the server, which manages the
// set of listeners. Listeners never warm (nothing they depend on is
// discovered) and are never updated in place, so those stats stay at zero;
// they exist so dashboards written for Envoy find them.
type ManagerStats struct {
	// ListenerAdded counts listeners added to the manager.
	ListenerAdded *stats.Counter
	// ListenerModified counts listeners replaced by discovery.
	ListenerModified *stats.Counter
	// ListenerRemoved counts listeners removed by discovery.
	ListenerRemoved *stats.Counter
	// ListenerCreateSuccess counts listeners started on a worker: one per
	// listener and worker.
	ListenerCreateSuccess *stats.Counter
	// ListenerCreateFailure counts listeners a worker failed to start.
	ListenerCreateFailure *stats.Counter
	// ListenerStopped counts listeners stopped by /drain_listeners.
	ListenerStopped *stats.Counter
	// TotalListenersActive is the number of listeners in service.
	TotalListenersActive *stats.Gauge
	// TotalListenersDraining is the number of listeners removed or
	// replaced by discovery whose connections are still draining.
	TotalListenersDraining *stats.Gauge
	// WorkersStarted is 1 once the workers have started.
	WorkersStarted *stats.Gauge
}

// NewManagerStats returns the listener manager stats of store, creating
// them on first use (a later call returns the same stats).
func NewManagerStats(store *stats.Store) *ManagerStats {
	scope := store.Scope("listener_manager.")
	scope.Counter("listener_in_place_updated")
	for _, name := range []string{"total_listeners_warming", "total_filter_chains_draining"} {
		scope.Gauge(name)
	}
	return &ManagerStats{
		ListenerAdded:          scope.Counter("listener_added"),
		ListenerModified:       scope.Counter("listener_modified"),
		ListenerRemoved:        scope.Counter("listener_removed"),
		ListenerCreateSuccess:  scope.Counter("listener_create_success"),
		ListenerCreateFailure:  scope.Counter("listener_create_failure"),
		ListenerStopped:        scope.Counter("listener_stopped"),
		TotalListenersActive:   scope.Gauge("total_listeners_active"),
		TotalListenersDraining: scope.Gauge("total_listeners_draining"),
		WorkersStarted:         scope.Gauge("workers_started"),
	}
}
