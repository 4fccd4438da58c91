package overload

import (
	"math"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Monitor is a polled resource monitor. Update measures the resource and
// calls report once, at once or later from any goroutine, with the
// pressure (the share of the configured maximum in use: 1 is the maximum,
// and it may exceed 1) or with the error that prevented the measure.
type Monitor interface {
	Update(report func(pressure float64, err error))
}

// resource is one configured monitor and its stats, under
// "overload.<name>.": pressure (percent), failed_updates and, for polled
// monitors, skipped_updates.
type resource struct {
	name    string
	monitor Monitor // nil for the proactive connections resource
	// pending is set while a polled monitor's update has not reported:
	// the next refresh skips the monitor rather than stack updates.
	pending  atomic.Bool
	pressure *stats.Gauge
	failed   *stats.Counter
	skipped  *stats.Counter // nil for the proactive resource
	// actions are the actions with a trigger on this resource, and the
	// index of that trigger in each.
	actions []actionRef
}

// actionRef is one trigger of an action on a resource.
type actionRef struct {
	action  *action
	trigger int
}

// newResource creates a resource and its stats (at zero).
func newResource(scope stats.Scope, name string, m Monitor) *resource {
	r := &resource{
		name:     name,
		monitor:  m,
		pressure: scope.Gauge("overload." + name + ".pressure"),
		failed:   scope.Counter("overload." + name + ".failed_updates"),
	}
	r.pressure.Set(0)
	if m != nil {
		r.skipped = scope.Counter("overload." + name + ".skipped_updates")
	}
	return r
}

// percent converts a pressure or an action state to the integer percent
// Envoy's gauges hold (truncated), bounded to what a gauge holds.
func percent(v float64) int64 {
	p := v * 100
	switch {
	case !(p > 0): // negative or NaN
		return 0
	case p >= math.MaxInt64:
		return math.MaxInt64
	default:
		return int64(p)
	}
}
