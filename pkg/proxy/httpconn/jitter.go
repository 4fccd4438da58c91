package httpconn

import "time"

// jittered is d extended by a random share of it, up to pct percent, as
// Envoy's max_connection_duration_jitter and drain_timeout_jitter: so that
// connections that started (or began draining) together do not all close
// at the same instant. random returns a number in [0, 1). A d of 0 (no
// limit) or a pct of 0 is returned as it is.
func jittered(d time.Duration, pct float64, random func() float64) time.Duration {
	if d <= 0 || pct <= 0 {
		return d
	}
	return d + time.Duration(random()*pct/100*float64(d))
}
