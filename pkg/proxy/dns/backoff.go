package dns

import (
	"math"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// Backoff is dns_failure_refresh_rate: after a failed resolution the next
// one comes after a random delay below an interval that starts at Base and
// doubles up to Max (Envoy's jittered exponential back-off).
type Backoff struct {
	Base, Max time.Duration
}

// FailureBackoff reads a dns_failure_refresh_rate (at path) with Envoy's
// rules: base_interval required and at least 1ms, max_interval ten times
// the base when unset, and not below the base. Nil when fr is. Errors are
// *ConfigError.
func FailureBackoff(fr *clusterv3.Cluster_RefreshRate, path string) (*Backoff, []error) {
	if fr == nil {
		return nil, nil
	}
	var errs []error
	read := func(d interface {
		CheckValid() error
		AsDuration() time.Duration
	}, set bool, field string) (time.Duration, bool) {
		if !set {
			return 0, false
		}
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			errs = append(errs, fieldErrorf(path+"."+field, "must be a non-negative duration"))
			return 0, false
		}
		return d.AsDuration(), true
	}
	base, okBase := read(fr.GetBaseInterval(), fr.GetBaseInterval() != nil, "base_interval")
	maxI, okMax := read(fr.GetMaxInterval(), fr.GetMaxInterval() != nil, "max_interval")
	switch {
	case !okBase:
		if fr.GetBaseInterval() == nil {
			errs = append(errs, fieldErrorf(path+".base_interval", "required"))
		}
	case base < time.Millisecond:
		errs = append(errs, fieldErrorf(path+".base_interval", "must be at least 1ms"))
	case !okMax:
		m := time.Duration(math.MaxInt64)
		if base <= m/10 {
			m = base * 10
		}
		return &Backoff{Base: base, Max: m}, errs
	case maxI < base:
		// Envoy's own check.
		errs = append(errs, fieldErrorf(path+".max_interval", "must be greater than or equal to the base_interval"))
	default:
		return &Backoff{Base: base, Max: maxI}, errs
	}
	return nil, errs
}

// BackoffState is the delay before the next resolution after a failure: the
// refresh rate, or dns_failure_refresh_rate's jittered exponential
// back-off (a random delay below an interval that doubles, capped at the
// maximum), reset by a success.
type BackoffState struct {
	fixed     time.Duration
	base, max time.Duration
	interval  time.Duration
	rand      func() uint64
}

// NewBackoffState starts the back-off of b, or, for a nil b, fixed delays
// of the refresh rate; rand draws the jitter.
func NewBackoffState(b *Backoff, refresh time.Duration, rand func() uint64) *BackoffState {
	if b == nil {
		return &BackoffState{fixed: refresh}
	}
	return &BackoffState{base: b.Base, max: b.Max, interval: b.Base, rand: rand}
}

// Next returns the next delay and grows the interval.
func (b *BackoffState) Next() time.Duration {
	if b.base == 0 {
		return b.fixed
	}
	cur := b.interval
	if b.interval > b.max/2 {
		b.interval = b.max
	} else {
		b.interval *= 2
	}
	ms := uint64(cur.Milliseconds())
	if ms == 0 {
		return time.Millisecond
	}
	// Never 0: a zero delay would spin on a failing server.
	return time.Duration(max(b.rand()%ms, 1)) * time.Millisecond
}

// Reset starts the back-off over.
func (b *BackoffState) Reset() { b.interval = b.base }
