package overload

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// action is one configured overload action: its triggers, by resource,
// and its state, the highest state of its triggers. Its stats, under
// "overload.<name>.", are active (1 while saturated) and scale_percent
// (the state as a percent). The manager's lock guards value and the
// triggers.
type action struct {
	kind     actionKind
	name     string
	triggers []trigger
	value    float64
	// active and scalePercent are the action's gauges.
	active       *stats.Gauge
	scalePercent *stats.Gauge
}

// newAction creates an action and its stats (at zero).
func newAction(scope stats.Scope, kind actionKind, name string) *action {
	a := &action{
		kind:         kind,
		name:         name,
		active:       scope.Gauge("overload." + name + ".active"),
		scalePercent: scope.Gauge("overload." + name + ".scale_percent"),
	}
	a.active.Set(0)
	a.scalePercent.Set(0)
	return a
}

// update feeds a new pressure to trigger i and reports whether the
// action's state changed. The gauges follow the action's state (the
// highest of its triggers).
func (a *action) update(i int, pressure float64) bool {
	if !a.triggers[i].update(pressure) {
		return false
	}
	v := 0.0
	for _, t := range a.triggers {
		v = max(v, t.state())
	}
	if v == a.value {
		return false
	}
	a.value = v
	if v >= 1 {
		a.active.Set(1)
	} else {
		a.active.Set(0)
	}
	a.scalePercent.Set(percent(v))
	return true
}
