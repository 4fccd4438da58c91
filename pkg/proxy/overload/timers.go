package overload

import "time"

// timerKind indexes the timers reduce_timeouts can scale.
type timerKind int

const (
	timerConnectionIdle timerKind = iota // HTTP_DOWNSTREAM_CONNECTION_IDLE
	timerStreamIdle                      // HTTP_DOWNSTREAM_STREAM_IDLE
	numTimers
)

// timerMinimum is a timer's configured minimum: an absolute duration
// (min_timeout) or a share of the configured timeout (min_scale).
type timerMinimum struct {
	set      bool
	absolute bool
	min      time.Duration // with absolute
	scale    float64       // without: min_scale as a fraction
}

// scaleTimer is Envoy's scaled range timer: a timeout d whose timer type
// has a minimum runs for min + (d - min) * (1 - state), where state is
// reduce_timeouts' state and min is min_timeout (capped at d) or
// min_scale * d. So it is d while the action is inactive and min once it
// is saturated. A timer type with no minimum configured, and a zero or
// negative d (a disabled timeout), are returned unchanged.
func (m *Manager) scaleTimer(k timerKind, d time.Duration) time.Duration {
	t := &m.timers[k]
	if d <= 0 || !t.set {
		return d
	}
	v := m.state(reduceTimeouts)
	if v <= 0 {
		return d
	}
	lo := t.min
	if !t.absolute {
		lo = time.Duration(t.scale * float64(d))
	}
	lo = min(lo, d)
	return lo + time.Duration(float64(d-lo)*(1-min(v, 1)))
}
