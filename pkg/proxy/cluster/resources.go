package cluster

import (
	"time"

	"math"
	"sync/atomic"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// resource is one circuit breaker: a count held against a limit, with
// the gauges Envoy publishes for it. It takes no lock: the count is one
// atomic, and acquiring below the limit is a compare-and-swap. A cluster's
// eight breakers are one allocation of 48-byte values (newResources):
// what they have in common is behind src.
type resource struct {
	// src is shared by the cluster's breakers; nil for no runtime.
	src *breakerSource
	// max is the configured limit; the runtime key
	// circuit_breakers.<cluster>.<priority>.<limit> overrides it, as in
	// Envoy (see limit).
	max uint32
	// priority (a corev3.RoutingPriority) and which (an index of
	// breakerLimits) name the runtime key, with src's cluster. The key is
	// built when a new runtime snapshot is read, not kept: eight keys of
	// some fifty bytes each were a twentieth of an idle cluster's memory.
	priority, which uint8
	cache           atomic.Pointer[runtimeLimit]
	count           atomic.Int64
	// open is circuit_breakers.<priority>.<x>_open: 1 while the count is
	// at the limit (the next acquisition would be refused).
	open *stats.Gauge
	// remaining is circuit_breakers.<priority>.remaining_<x>, nil unless
	// track_remaining is set.
	remaining *stats.Gauge
}

// breakerSource is what a cluster's breakers share: the cluster's name
// for their runtime keys, and the runtime (rt nil: none).
type breakerSource struct {
	cluster string
	rt      func() *runtime.Snapshot
}

// breakerLimits are the limits' names in runtime keys, by resource.which.
var breakerLimits = [...]string{"max_connections", "max_pending_requests", "max_requests", "max_retries"}

// runtimeKey is the breaker's runtime key.
func (r *resource) runtimeKey() string {
	return "circuit_breakers." + r.src.cluster + "." + priorityName(corev3.RoutingPriority(r.priority)) + "." + breakerLimits[r.which]
}

// runtimeLimit is a limit as one runtime snapshot sets it.
type runtimeLimit struct {
	snap *runtime.Snapshot
	max  int64
}

// init sets up a zero breaker with the configured limit, which the
// runtime key (when src has a runtime) overrides.
func (r *resource) init(limit uint32, src *breakerSource, priority, which uint8, open, remaining *stats.Gauge) {
	r.max, r.src, r.priority, r.which, r.open, r.remaining = limit, src, priority, which, open, remaining
	if remaining != nil {
		remaining.Set(r.limit())
	}
}

// limit is the limit in force: the runtime key's value when the current
// snapshot has one, else the configured limit. The lookup is made once
// per snapshot; otherwise it costs two atomic loads.
func (r *resource) limit() int64 {
	if r.src == nil || r.src.rt == nil {
		return int64(r.max)
	}
	snap := r.src.rt()
	if snap == nil {
		return int64(r.max)
	}
	if c := r.cache.Load(); c != nil && c.snap == snap {
		return c.max
	}
	n := min(snap.Uint64(r.runtimeKey(), uint64(r.max)), math.MaxInt64)
	r.cache.Store(&runtimeLimit{snap: snap, max: int64(n)})
	return int64(n)
}

// tryAcquire takes one unit unless the count is at the limit.
func (r *resource) tryAcquire() bool { return r.tryAcquireUpTo(r.limit()) }

// tryAcquireUpTo takes one unit unless the count is at limit, which a
// retry budget computes at each acquisition.
func (r *resource) tryAcquireUpTo(limit int64) bool {
	for {
		n := r.count.Load()
		if n >= limit {
			return false
		}
		if r.count.CompareAndSwap(n, n+1) {
			r.publish(limit)
			return true
		}
	}
}

// force takes one unit even past the limit: a pool with no connection
// to its host opens one anyway, as Envoy's does, or its pending requests
// could wait for connections to other hosts that never come.
func (r *resource) force() {
	r.count.Add(1)
	r.publish(r.limit())
}

// release gives one unit back.
func (r *resource) release() { r.releaseUpTo(r.limit()) }

// releaseUpTo gives one unit back, publishing the gauges against limit.
func (r *resource) releaseUpTo(limit int64) {
	r.count.Add(-1)
	r.publish(limit)
}

// canAcquire reports whether the count is below the limit.
func (r *resource) canAcquire() bool { return r.count.Load() < r.limit() }

// publish sets the gauges from the count and the limit in force. Two
// holders changing the count at once may publish in the opposite order;
// each re-reads the count after publishing and publishes again when it
// moved, so the last publication always matches the count that stays.
// The open gauge is written only when it changes: most requests leave it
// as it was, and a write would bounce its cache line between cores.
func (r *resource) publish(limit int64) {
	for {
		n := r.count.Load()
		var open int64
		if n >= limit {
			open = 1
		}
		if r.open.Value() != open || !r.open.Used() {
			r.open.Set(open)
		}
		if r.remaining != nil {
			r.remaining.Set(max(limit-n, 0))
		}
		if r.count.Load() == n {
			return
		}
	}
}

// resources are the circuit breakers of one routing priority.
type resources struct {
	cx, pending, rq, retries resource
	// budget, when set, limits retries instead of max_retries; window
	// counts its requests when it has a budget_interval.
	budget *RetryBudget
	window *budgetWindow
	// perHostCx is per_host_thresholds' max_connections (see hostFull).
	perHostCx perHostLimit
}

// startRequest counts a request that took its max_requests unit in the
// retry budget's window, when it has one.
func (res *resources) startRequest() {
	if res.window != nil {
		res.window.add()
	}
}

// retryLimit is the number of retries allowed in flight now: the retry
// budget's share of the requests active and pending when there is one,
// else max_retries.
func (res *resources) retryLimit() int64 {
	switch {
	case res.budget == nil:
		return res.retries.limit()
	case res.window != nil:
		return res.budget.max(res.window.count())
	}
	return res.budget.max(res.rq.count.Load() + res.pending.count.Load())
}

// priorityName is a routing priority as Envoy's breaker stats name it.
func priorityName(p corev3.RoutingPriority) string {
	if p == corev3.RoutingPriority_HIGH {
		return "high"
	}
	return "default"
}

// The positions of breakerTemplate's gauges: cx_pool_open, then each
// limit's open gauge, then (breakerRemainingTemplate only) each limit's
// remaining gauge, limits in the order of breakerLimits.
const (
	tPoolOpen  = 0
	tOpen      = 1
	tRemaining = tOpen + 4
)

// breakerTemplate and breakerRemainingTemplate are the gauges
// newResources makes under each priority's scope, without and with
// track_remaining, as one block (see stats.Template). They are never
// modified.
var (
	breakerTemplate          = newBreakerTemplate(false)
	breakerRemainingTemplate = newBreakerTemplate(true)
)

func newBreakerTemplate(remaining bool) *stats.Template {
	ts := []stats.TemplateStat{
		tPoolOpen: stats.GaugeStat("cx_pool_open"),
		tOpen + 0: stats.GaugeStat("cx_open"),
		tOpen + 1: stats.GaugeStat("rq_pending_open"),
		tOpen + 2: stats.GaugeStat("rq_open"),
		tOpen + 3: stats.GaugeStat("rq_retry_open"),
	}
	if remaining {
		ts = append(ts,
			stats.GaugeStat("remaining_cx"),
			stats.GaugeStat("remaining_pending"),
			stats.GaugeStat("remaining_rq"),
			stats.GaugeStat("remaining_retries"))
	}
	return stats.NewTemplate(ts...)
}

// newResources creates the breakers of both priorities and their gauges
// under "circuit_breakers.<priority>." in the cluster's scope, each limit
// overridden by the runtime key circuit_breakers.<cluster>.<priority>.
// <limit> (rt nil: no runtime). Envoy also has cx_pool_open for
// max_connection_pools, which Outrigger refuses: the gauge exists and
// stays 0, as Envoy's does without that limit.
func newResources(scope stats.Scope, cluster string, t [numPriorities]Thresholds, perHost [numPriorities]perHostLimit, rt func() *runtime.Snapshot, now func() time.Time) *[numPriorities]resources {
	out := new([numPriorities]resources)
	src := &breakerSource{cluster: cluster, rt: rt}
	for p := range out {
		sc := scope.Scope("circuit_breakers." + priorityName(corev3.RoutingPriority(p)) + ".")
		tmpl := breakerTemplate
		if t[p].TrackRemaining {
			tmpl = breakerRemainingTemplate
		}
		b := sc.NewBlock(tmpl)
		breaker := func(r *resource, limit uint8, max uint32) {
			var rem *stats.Gauge
			if t[p].TrackRemaining {
				rem = b.Gauge(tRemaining + int(limit))
			}
			r.init(max, src, uint8(p), limit, b.Gauge(tOpen+int(limit)), rem)
		}
		res := &out[p]
		res.perHostCx = perHost[p]
		breaker(&res.cx, 0, t[p].MaxConnections)
		breaker(&res.pending, 1, t[p].MaxPendingRequests)
		breaker(&res.rq, 2, t[p].MaxRequests)
		res.budget = t[p].RetryBudget
		if res.budget != nil && res.budget.Interval > 0 {
			res.window = newBudgetWindow(res.budget.Interval, now)
		}
		if res.budget != nil {
			// The budget's limit moves with requests that do not touch
			// the retry breaker: like Envoy, remaining_retries stays 0
			// (it exists with track_remaining).
			res.retries.init(t[p].MaxRetries, src, uint8(p), 3, b.Gauge(tOpen+3), nil)
			continue
		}
		breaker(&res.retries, 3, t[p].MaxRetries)
	}
	return out
}
