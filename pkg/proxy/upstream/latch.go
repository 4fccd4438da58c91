package upstream

import "sync/atomic"

// Latched are a host's request counts since the previous Latch: what a
// load report carries (Envoy's counter latch()).
type Latched struct {
	Success, Error, Issued uint64
}

// hostLatch is where Latch last read each counter. Only the load
// reporter latches, off the request path: requests keep counting into
// the ordinary counters, which /clusters shows whole.
type hostLatch struct {
	success, error, issued atomic.Uint64
}

// Latch returns the requests counted since the previous call (all of
// them the first time) and remembers the counters where they are now.
// One caller latches (the load reporter); two would split the counts.
func (s *HostStats) Latch() Latched {
	return Latched{
		Success: latch(&s.RqSuccess, &s.latched.success),
		Error:   latch(&s.RqError, &s.latched.error),
		Issued:  latch(&s.RqTotal, &s.latched.issued),
	}
}

// latch is the growth of counter since *at, moving *at to its value.
func latch(counter, at *atomic.Uint64) uint64 {
	now := counter.Load()
	return now - at.Swap(now)
}
