package cluster

import (
	"sync"
	"time"
)

// budgetSlots is the number of slots of a retry budget's window, as in
// Envoy: a request leaves the count between nine and ten tenths of
// budget_interval after it started.
const budgetSlots = 10

// budgetWindow counts the requests that started within a retry budget's
// budget_interval, completed or not: with the interval set, the budget is
// a share of them rather than of the requests active and pending
// (RetryBudget.Interval). It is made only for a budget with an interval.
type budgetWindow struct {
	now  func() time.Time
	slot time.Duration

	mu sync.Mutex
	// start is when the newest slot, counts[head], began; zero before
	// the first request.
	start  time.Time
	head   int
	counts [budgetSlots]uint64
}

// newBudgetWindow returns the window of interval (positive) read with
// now.
func newBudgetWindow(interval time.Duration, now func() time.Time) *budgetWindow {
	return &budgetWindow{now: now, slot: max(interval/budgetSlots, 1)}
}

// advanceLocked moves the window to now: the slots that ended go.
func (w *budgetWindow) advanceLocked(now time.Time) {
	if w.start.IsZero() {
		w.start = now
		return
	}
	n := now.Sub(w.start) / w.slot
	switch {
	case n <= 0:
		return
	case n >= budgetSlots:
		w.counts, w.head, w.start = [budgetSlots]uint64{}, 0, now
		return
	}
	for range n {
		w.head = (w.head + 1) % budgetSlots
		w.counts[w.head] = 0
	}
	w.start = w.start.Add(n * w.slot)
}

// add counts a request that starts now.
func (w *budgetWindow) add() {
	now := w.now()
	w.mu.Lock()
	w.advanceLocked(now)
	w.counts[w.head]++
	w.mu.Unlock()
}

// count is the number of requests that started within the interval.
func (w *budgetWindow) count() int64 {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked(now)
	var n uint64
	for _, c := range w.counts {
		n += c
	}
	return int64(n)
}
