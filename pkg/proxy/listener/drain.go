package listener

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// DrainOptions configure how a listener's connections drain (--drain-time-s
// and --drain-strategy), and what else makes them close.
type DrainOptions struct {
	// Time is the drain time: a gradual drain reaches every response by its
	// end, and a graceful /drain_listeners stops the listener then.
	Time time.Duration
	// Immediate asks every response to close its connection from the start
	// of the drain (--drain-strategy immediate) instead of a growing share
	// (gradual).
	Immediate bool
	// HealthCheckFailed reports the server failing health checks
	// (/healthcheck/fail): then, as in Envoy, every response of a listener
	// with drain_type DEFAULT closes its connection, drain or not. Nil
	// means never.
	HealthCheckFailed func() bool

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Random returns a number in [0, 1) for the gradual strategy's draw;
	// nil means math/rand/v2.Float64.
	Random func() float64
	// AfterFunc schedules f after d and returns a function that cancels it
	// (reporting whether it did); nil means time.AfterFunc.
	AfterFunc func(d time.Duration, f func()) (cancel func() bool)
}

// Drain is one listener's drain state. It tells the listener's network
// filters, response by response, whether to close the connection
// (HTTP/1 "Connection: close", HTTP/2 GOAWAY); it implements the
// connection manager's Drainer. It is safe for concurrent use, and
// DrainClose takes no lock: it runs for every response.
type Drain struct {
	opts       DrainOptions
	modifyOnly bool      // drain_type MODIFY_ONLY: health-check failure does not drain
	base       time.Time // origin of started, so the clock's monotonic reading is used

	// started is when the drain began, as nanoseconds since base plus one;
	// zero while not draining.
	started atomic.Int64
	// span is how long the gradual drain takes to reach every response, in
	// nanoseconds plus one; zero means the drain time. StartWithin sets it.
	span atomic.Int64

	mu      sync.Mutex
	pending map[int]func() bool // cancel functions of scheduled completions
	nextID  int
}

// newDrain returns a drain that has not started. modifyOnly is the
// listener's drain_type MODIFY_ONLY.
func newDrain(o DrainOptions, modifyOnly bool) *Drain {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Random == nil {
		o.Random = rand.Float64
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &Drain{opts: o, modifyOnly: modifyOnly, base: o.Now(), pending: map[int]func() bool{}}
}

// Start begins the drain sequence unless it has begun, and reports whether
// it began now. A drain is never undone: the listener's connections keep
// draining until they are gone.
func (d *Drain) Start() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started.Load() != 0 {
		return false
	}
	d.started.Store(int64(d.opts.Now().Sub(d.base)) + 1)
	return true
}

// StartWithin is Start for a drain that must reach every response within
// d from now (the termination drain after SIGTERM) rather than after the
// drain time: a gradual drain's share grows to all responses over d. A
// drain already under way that would end later is shortened to end d from
// now (its share then jumps up, never down). It reports whether the drain
// began now.
func (d *Drain) StartWithin(within time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.opts.Now().Sub(d.base)
	started := d.started.Load()
	if started == 0 {
		d.span.Store(int64(max(within, 0)) + 1)
		d.started.Store(int64(now) + 1)
		return true
	}
	elapsed := now - time.Duration(started-1)
	if end := elapsed + max(within, 0); end < d.spanTime() {
		d.span.Store(int64(end) + 1)
	}
	return false
}

// spanTime is how long the gradual drain takes to reach every response.
func (d *Drain) spanTime() time.Duration {
	if s := d.span.Load(); s != 0 {
		return time.Duration(s - 1)
	}
	return d.opts.Time
}

// After runs f once a drain time has passed from now, unless Cancel runs
// first. The graceful /drain_listeners uses it to stop the listener at the
// end of its drain sequence.
func (d *Drain) After(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.nextID
	d.nextID++
	d.pending[id] = d.opts.AfterFunc(d.opts.Time, func() {
		d.mu.Lock()
		_, live := d.pending[id]
		delete(d.pending, id)
		d.mu.Unlock()
		if live {
			f()
		}
	})
}

// Cancel drops every completion scheduled with After that has not run.
func (d *Drain) Cancel() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, cancel := range d.pending {
		cancel()
		delete(d.pending, id)
	}
}

// Draining reports whether the drain sequence has started.
func (d *Drain) Draining() bool { return d.started.Load() != 0 }

// DrainClose reports whether the response being sent should close its
// connection. Outside a drain it is false, unless the server fails health
// checks and the listener's drain_type is DEFAULT. During a drain it is
// always true with the immediate strategy or a zero drain time; with the
// gradual strategy it is true with a probability that grows linearly from
// 0 at the start of the drain to 1 at its end (the drain time, or the span
// given to StartWithin) (Envoy draws per whole
// second; this draws on the exact elapsed time).
func (d *Drain) DrainClose() bool {
	if !d.modifyOnly && d.opts.HealthCheckFailed != nil && d.opts.HealthCheckFailed() {
		return true
	}
	started := d.started.Load()
	if started == 0 {
		return false
	}
	span := d.spanTime()
	if d.opts.Immediate || span <= 0 {
		return true
	}
	elapsed := d.opts.Now().Sub(d.base) - time.Duration(started-1)
	if elapsed >= span {
		return true
	}
	return float64(elapsed)/float64(span) > d.opts.Random()
}
