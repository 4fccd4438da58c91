package stats

import "sync/atomic"

// Counter only goes up. The admin can reset what it shows (/reset_counters)
// without disturbing the deltas that sinks receive: a reset subtracts the
// same amount from the value and from the value latched at the last flush,
// so the next flush's delta (value - latched) is unchanged.
//
// A Counter is 32 bytes: two words of value, the store that learns of its
// first use, and one word of name.
type Counter struct {
	value atomic.Uint64 // count since creation or the last reset
	// latched is the value at the last flush, less any reset since; only
	// the flusher and the reset touch it, under Store.flushMu.
	latched uint64
	store   *Store        // nil for a counter the stats matcher rejected
	parent  uint32        // name tree node of the name's prefix
	meta    atomic.Uint32 // last name segment id | usedBit
}

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Add adds n and marks the counter used, even when n is 0.
//
// The increment is one atomic add. The used bit lives in another word, but
// it only needs setting when the value was zero before the add, which the
// add's result tells without another memory access: the slow path runs
// once per counter (and once more after each /reset_counters, to find the
// bit already set).
func (c *Counter) Add(n uint64) {
	if c.value.Add(n) == n {
		c.firstAdd()
	}
}

// firstAdd marks the counter used; see Add. It is kept out of line so
// that Add stays small enough to inline into its callers.
//
//go:noinline
func (c *Counter) firstAdd() {
	if c.meta.Load()&usedBit == 0 {
		markUsed(c.store, KindCounter, c.parent, &c.meta)
	}
}

// Value returns the count since creation or since the last reset.
func (c *Counter) Value() uint64 { return c.value.Load() }

// Used reports whether the counter was ever added to. A reset does not
// clear it.
func (c *Counter) Used() bool { return c.meta.Load()&usedBit != 0 }

// resetLocal zeroes what the admin shows; sinks' deltas are unaffected.
// Increments racing with it are kept: only the amount read is removed.
// The caller holds Store.flushMu.
func (c *Counter) resetLocal() {
	v := c.value.Load()
	c.value.Add(-v)
	c.latched -= v // unsigned wrap-around keeps value - latched exact
}

// latch returns the increase since the previous latch. The caller holds
// Store.flushMu.
func (c *Counter) latch() uint64 {
	v := c.value.Load()
	d := v - c.latched
	c.latched = v
	return d
}
