package stats

import "sync/atomic"

// Gauge holds a value that goes up and down.
//
// A gauge can return to any value, so unlike Counter.Add the result of its
// atomic operation cannot tell a first write; each write also loads the
// used bit, from the same cache line, which costs a fraction of the atomic
// operation itself.
type Gauge struct {
	value  atomic.Int64
	store  *Store // nil for a gauge the stats matcher rejected
	parent uint32
	meta   atomic.Uint32 // last name segment id | usedBit
}

// Set replaces the value.
func (g *Gauge) Set(v int64) {
	g.value.Store(v)
	if g.meta.Load()&usedBit == 0 {
		g.markUsed()
	}
}

// Add adds d, which may be negative.
func (g *Gauge) Add(d int64) {
	g.value.Add(d)
	if g.meta.Load()&usedBit == 0 {
		g.markUsed()
	}
}

// Inc adds one. It repeats Add's body rather than calling it: the call
// would push it past the compiler's inlining budget.
func (g *Gauge) Inc() {
	g.value.Add(1)
	if g.meta.Load()&usedBit == 0 {
		g.markUsed()
	}
}

// Dec subtracts one, written out like Inc.
func (g *Gauge) Dec() {
	g.value.Add(-1)
	if g.meta.Load()&usedBit == 0 {
		g.markUsed()
	}
}

// markUsed is the slow path of a gauge's first write, kept out of line so
// that Set and Add inline into their callers.
//
//go:noinline
func (g *Gauge) markUsed() { markUsed(g.store, KindGauge, g.parent, &g.meta) }

// Value returns the current value.
func (g *Gauge) Value() int64 { return g.value.Load() }

// Used reports whether the gauge was ever changed.
func (g *Gauge) Used() bool { return g.meta.Load()&usedBit != 0 }
