package overload

import "time"

// Clock is the time source of the manager's loops: the refresh loop and
// the shrink_heap loop wait on After, and the refresh delays are measured
// with Now. Tests pass a clock they drive.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// realClock is the system clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
