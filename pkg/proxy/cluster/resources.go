package cluster

import (
	"sync/atomic"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// resource is one circuit breaker: a count held against a limit, with
// the gauges Envoy publishes for it. It takes no lock: the count is one
// atomic, and acquiring below the limit is a compare-and-swap.
type resource struct {
	max   int64
	count atomic.Int64
	// open is circuit_breakers.<priority>.<x>_open: 1 while the count is
	// at the limit (the next acquisition would be refused).
	open *stats.Gauge
	// remaining is circuit_breakers.<priority>.remaining_<x>, nil unless
	// track_remaining is set.
	remaining *stats.Gauge
}

func newResource(limit uint32, open, remaining *stats.Gauge) *resource {
	r := &resource{max: int64(limit), open: open, remaining: remaining}
	if remaining != nil {
		remaining.Set(r.max)
	}
	return r
}

// tryAcquire takes one unit unless the count is at the limit.
func (r *resource) tryAcquire() bool {
	for {
		n := r.count.Load()
		if n >= r.max {
			return false
		}
		if r.count.CompareAndSwap(n, n+1) {
			r.publish()
			return true
		}
	}
}

// force takes one unit even past the limit: a pool with no connection
// to its host opens one anyway, as Envoy's does, or its pending requests
// could wait for connections to other hosts that never come.
func (r *resource) force() {
	r.count.Add(1)
	r.publish()
}

// release gives one unit back.
func (r *resource) release() {
	r.count.Add(-1)
	r.publish()
}

// canAcquire reports whether the count is below the limit.
func (r *resource) canAcquire() bool { return r.count.Load() < r.max }

// publish sets the gauges from the count. Two holders changing the count
// at once may publish in the opposite order; each re-reads the count after
// publishing and publishes again when it moved, so the last publication
// always matches the count that stays.
func (r *resource) publish() {
	for {
		n := r.count.Load()
		var open int64
		if n >= r.max {
			open = 1
		}
		r.open.Set(open)
		if r.remaining != nil {
			r.remaining.Set(max(r.max-n, 0))
		}
		if r.count.Load() == n {
			return
		}
	}
}

// resources are the circuit breakers of one routing priority.
type resources struct {
	cx, pending, rq, retries *resource
}

// priorityName is a routing priority as Envoy's breaker stats name it.
func priorityName(p corev3.RoutingPriority) string {
	if p == corev3.RoutingPriority_HIGH {
		return "high"
	}
	return "default"
}

// newResources creates the breakers of both priorities and their gauges
// under "circuit_breakers.<priority>." in the cluster's scope. Envoy also
// has cx_pool_open for max_connection_pools, which Outrigger refuses: the
// gauge exists and stays 0, as Envoy's does without that limit.
func newResources(scope stats.Scope, t [numPriorities]Thresholds) [numPriorities]resources {
	var out [numPriorities]resources
	for p := range out {
		prefix := "circuit_breakers." + priorityName(corev3.RoutingPriority(p)) + "."
		remaining := func(name string) *stats.Gauge {
			if !t[p].TrackRemaining {
				return nil
			}
			return scope.Gauge(prefix + name)
		}
		scope.Gauge(prefix + "cx_pool_open")
		out[p] = resources{
			cx:      newResource(t[p].MaxConnections, scope.Gauge(prefix+"cx_open"), remaining("remaining_cx")),
			pending: newResource(t[p].MaxPendingRequests, scope.Gauge(prefix+"rq_pending_open"), remaining("remaining_pending")),
			rq:      newResource(t[p].MaxRequests, scope.Gauge(prefix+"rq_open"), remaining("remaining_rq")),
			retries: newResource(t[p].MaxRetries, scope.Gauge(prefix+"rq_retry_open"), remaining("remaining_retries")),
		}
	}
	return out
}
