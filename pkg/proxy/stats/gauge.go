package stats

import "sync/atomic"

// Gauge holds a value that goes up and down.
type Gauge struct {
	value  atomic.Int64
	parent uint32
	meta   atomic.Uint32 // last name segment id | usedBit
}

// Set replaces the value.
func (g *Gauge) Set(v int64) {
	g.value.Store(v)
	g.markUsed()
}

// Add adds d, which may be negative.
func (g *Gauge) Add(d int64) {
	g.value.Add(d)
	g.markUsed()
}

// Inc adds one.
func (g *Gauge) Inc() { g.Add(1) }

// Dec subtracts one.
func (g *Gauge) Dec() { g.Add(-1) }

func (g *Gauge) markUsed() {
	if g.meta.Load()&usedBit == 0 {
		g.meta.Or(usedBit)
	}
}

// Value returns the current value.
func (g *Gauge) Value() int64 { return g.value.Load() }

// Used reports whether the gauge was ever changed.
func (g *Gauge) Used() bool { return g.meta.Load()&usedBit != 0 }
