package overload

// trigger turns a resource's pressure into an action state between 0
// (inactive) and 1 (saturated).
type trigger interface {
	// update takes a new pressure and reports whether the state changed.
	update(pressure float64) bool
	// state is the state after the last update (0 before any).
	state() float64
}

// thresholdTrigger saturates the action when the pressure reaches value,
// and leaves it inactive below.
type thresholdTrigger struct {
	threshold float64
	value     float64
}

func (t *thresholdTrigger) update(pressure float64) bool {
	old := t.value
	t.value = 0
	if pressure >= t.threshold {
		t.value = 1
	}
	return t.value != old
}

func (t *thresholdTrigger) state() float64 { return t.value }

// scaledTrigger is inactive up to scaling (inclusive), saturated from
// saturation (inclusive), and scales linearly in between. scaling is
// below saturation (checked when the configuration is compiled).
type scaledTrigger struct {
	scaling, saturation float64
	value               float64
}

func (t *scaledTrigger) update(pressure float64) bool {
	old := t.value
	switch {
	case pressure <= t.scaling:
		t.value = 0
	case pressure >= t.saturation:
		t.value = 1
	default:
		t.value = (pressure - t.scaling) / (t.saturation - t.scaling)
	}
	return t.value != old
}

func (t *scaledTrigger) state() float64 { return t.value }
