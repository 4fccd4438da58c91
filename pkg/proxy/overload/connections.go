package overload

import (
	"math"
	"sync/atomic"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// connections is the global downstream connection accounting. Every
// connection a listener accepts is counted from its acceptance to its
// close (listeners with ignore_global_conn_limit included: they are
// counted but never refused). The limit is the downstream connections
// monitor's max_active_downstream_connections when it is configured (a
// "proactive" resource: checked and counted here, at accept time), else
// the runtime key overload.global_downstream_max_connections, else none.
type connections struct {
	open atomic.Int64
	// max is the monitor's limit; 0 when the monitor is not configured.
	max int64
	// res is the monitor's resource (its stats and triggers); nil when
	// the monitor is not configured.
	res     *resource
	runtime *runtime.Runtime
	log     logr.Logger
	// warnedBoth is set once the conflict between the monitor and the
	// runtime key has been reported.
	warnedBoth atomic.Bool
}

// acquire counts a new connection. With enforce it first checks the
// limit and, at the limit, counts nothing and returns false (and with the
// monitor counts a failed update, as Envoy does for a refused
// allocation).
func (c *connections) acquire(enforce bool) bool {
	if !enforce {
		c.open.Add(1)
		return true
	}
	limit := c.limit()
	for {
		cur := c.open.Load()
		if cur >= limit {
			if c.res != nil {
				c.res.failed.Inc()
			}
			return false
		}
		if c.open.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

// release ends the count of a connection acquire counted.
func (c *connections) release() { c.open.Add(-1) }

// limit is the global limit in force: the monitor's, else the runtime
// key's, else none. With both, the monitor wins and the conflict is
// logged once, as Envoy does.
func (c *connections) limit() int64 {
	if c.res != nil {
		if !c.warnedBoth.Load() && c.runtime != nil {
			if _, ok := c.runtime.Snapshot().Get(GlobalMaxConnectionsRuntimeKey); ok && c.warnedBoth.CompareAndSwap(false, true) {
				logging.Warning(c.log, "Global downstream connections limits is configured via deprecated runtime key "+
					GlobalMaxConnectionsRuntimeKey+" and in "+MonitorGlobalConnections+". Using overload manager config.")
			}
		}
		return c.max
	}
	return runtimeLimit(c.runtime, GlobalMaxConnectionsRuntimeKey)
}

// runtimeLimit reads a connection limit from a runtime key as Envoy's
// getInteger reads it (runtime.Snapshot.Uint64). A missing or malformed
// value means no limit.
func runtimeLimit(rt *runtime.Runtime, key string) int64 {
	if rt == nil {
		return math.MaxInt64
	}
	return int64(min(rt.Snapshot().Uint64(key, math.MaxInt64), math.MaxInt64))
}

// pressure is the monitor's pressure: open connections over the limit.
func (c *connections) pressure() float64 {
	return float64(c.open.Load()) / float64(c.max)
}
