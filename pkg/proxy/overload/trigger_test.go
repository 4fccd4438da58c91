package overload

import "testing"

func TestThresholdTrigger(t *testing.T) {
	steps := []struct {
		pressure    float64
		wantState   float64
		wantChanged bool
	}{
		{0.5, 0, false},
		{0.79, 0, false},
		{0.8, 1, true}, // at the threshold: fired
		{0.95, 1, false},
		{0.7999, 0, true},
		{3, 1, true}, // past the maximum
	}
	tr := &thresholdTrigger{threshold: 0.8}
	for i, s := range steps {
		changed := tr.update(s.pressure)
		if changed != s.wantChanged || tr.state() != s.wantState {
			t.Errorf("step %d: update(%v) = %v, state %v; want %v, %v", i, s.pressure, changed, tr.state(), s.wantChanged, s.wantState)
		}
	}
}

func TestScaledTrigger(t *testing.T) {
	steps := []struct {
		pressure    float64
		wantState   float64
		wantChanged bool
	}{
		{0.1, 0, false},
		{0.5, 0, false},  // at scaling_threshold: still inactive
		{0.6, 0.5, true}, // half way
		{0.6, 0.5, false},
		{0.65, 0.75, true},
		{0.7, 1, true}, // at saturation_threshold: saturated
		{0.9, 1, false},
		{0.55, 0.25, true},
		{0.2, 0, true},
	}
	tr := &scaledTrigger{scaling: 0.5, saturation: 0.7}
	for i, s := range steps {
		changed := tr.update(s.pressure)
		if changed != s.wantChanged || !near(tr.state(), s.wantState) {
			t.Errorf("step %d: update(%v) = %v, state %v; want %v, %v", i, s.pressure, changed, tr.state(), s.wantChanged, s.wantState)
		}
	}
}

// near compares two states up to floating-point rounding.
func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
