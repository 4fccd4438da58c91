package overload

import (
	"testing"
	"time"
)

// TestScaleTimers: reduce_timeouts moves a timeout from its configured
// value (inactive) to its minimum (saturated), linearly with the action's
// state, as Envoy's scaled range timers do.
func TestScaleTimers(t *testing.T) {
	h := &heap{}
	m, _ := testManager(t, `
resource_monitors: [`+heapMonitor+`]
actions:
- name: envoy.overload_actions.reduce_timeouts
  triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.85, saturation_threshold: 0.95}}]
  typed_config:
    "@type": `+timersURL+`
    timer_scale_factors:
    - {timer: HTTP_DOWNSTREAM_CONNECTION_IDLE, min_timeout: 2s}
    - {timer: HTTP_DOWNSTREAM_STREAM_IDLE, min_scale: {value: 10}}
`, h, nil)
	tests := []struct {
		heap             uint64
		d                time.Duration
		idle, streamIdle time.Duration
	}{
		{heap: 500, d: 600 * time.Second, idle: 600 * time.Second, streamIdle: 600 * time.Second},
		// Envoy's documented example: 600 s at 92% (state 0.7) is 181.4 s.
		{heap: 920, d: 600 * time.Second, idle: 181400 * time.Millisecond, streamIdle: 222 * time.Second},
		{heap: 950, d: 600 * time.Second, idle: 2 * time.Second, streamIdle: 60 * time.Second},
		{heap: 2000, d: 600 * time.Second, idle: 2 * time.Second, streamIdle: 60 * time.Second},
		// A minimum above the timeout is capped at the timeout.
		{heap: 950, d: time.Second, idle: time.Second, streamIdle: 100 * time.Millisecond},
		// A disabled (zero) timeout stays disabled.
		{heap: 950, d: 0, idle: 0, streamIdle: 0},
		{heap: 100, d: 30 * time.Second, idle: 30 * time.Second, streamIdle: 30 * time.Second},
	}
	for i, tc := range tests {
		h.set(tc.heap)
		m.refresh()
		idle, stream := m.ScaleIdleTimeout(tc.d), m.ScaleStreamIdleTimeout(tc.d)
		if !closeTo(idle, tc.idle) || !closeTo(stream, tc.streamIdle) {
			t.Errorf("case %d (heap %d, %s): idle %s, stream idle %s; want %s, %s", i, tc.heap, tc.d, idle, stream, tc.idle, tc.streamIdle)
		}
	}
}

// TestScaleTimersUnconfiguredType: a timer type with no minimum is never
// scaled, whatever the action's state.
func TestScaleTimersUnconfiguredType(t *testing.T) {
	h := &heap{}
	m, _ := testManager(t, `
resource_monitors: [`+heapMonitor+`]
actions:
- name: proxy.overload_actions.reduce_timeouts
  triggers: [`+heapTrigger+`]
  typed_config: {"@type": `+timersURL+`, timer_scale_factors: [{timer: HTTP_DOWNSTREAM_STREAM_IDLE, min_timeout: 1s}]}
`, h, nil)
	h.set(5000)
	m.refresh()
	if got := m.ScaleIdleTimeout(time.Minute); got != time.Minute {
		t.Errorf("idle timeout = %s, want 1m (not configured)", got)
	}
	if got := m.ScaleStreamIdleTimeout(time.Minute); got != time.Second {
		t.Errorf("stream idle timeout = %s, want 1s", got)
	}
}

// closeTo compares durations up to a microsecond of rounding.
func closeTo(a, b time.Duration) bool { return (a - b).Abs() <= time.Microsecond }
