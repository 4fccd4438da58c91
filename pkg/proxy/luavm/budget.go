package luavm

import (
	"context"
	"sync"
	"time"
)

// Budget bounds how long a state runs a script. gopher-lua checks its
// state's context before every instruction; the budget's context is
// cancelled by a timer when a run goes past its time, which stops the
// script (and the coroutines it made, whose contexts derive from it) with
// a Lua error. A cancelled state is never used again, so one context
// serves the state's whole life and a run costs a timer reset, not a new
// context.
type Budget struct {
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer

	mu sync.Mutex
	// deadline is when the current run's time is up; running is false
	// between runs and while a run waits (an HTTP call, a body).
	deadline time.Time
	running  bool
	expired  bool
}

// NewBudget returns a budget with its timer stopped.
func NewBudget() *Budget {
	b := &Budget{}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.timer = time.AfterFunc(time.Hour, b.fire)
	b.timer.Stop()
	return b
}

// Start begins a run (or resumes one after a wait) of at most d.
func (b *Budget) Start(d time.Duration) {
	b.mu.Lock()
	b.deadline = time.Now().Add(d)
	b.running = true
	b.mu.Unlock()
	b.timer.Reset(d)
}

// Stop ends a run or pauses it for a wait: it reports whether the run
// went past its time (the script was stopped).
func (b *Budget) Stop() (expired bool) {
	b.timer.Stop()
	b.mu.Lock()
	b.running = false
	expired = b.expired
	b.mu.Unlock()
	return expired
}

// Left is the time the current run has left, for a run resumed after a
// wait.
func (b *Budget) Left() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Until(b.deadline)
}

// fire runs on the timer: it cancels the context if a run is on and its
// time is up. A late timer of an earlier run finds the run over, or a
// later deadline, and does nothing.
func (b *Budget) fire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running && !time.Now().Before(b.deadline) {
		b.expired = true
		b.cancel()
	}
}
