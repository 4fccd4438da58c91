// Package stats holds the proxy's counters and gauges. Components look a
// stat up once, keep the pointer, and update it with one atomic operation on
// the request path; the store's map is only touched at creation and when the
// admin renders.
//
// This is the first slice of the stats engine: counters and gauges by full
// name. Histograms, text readouts, tag extraction, flushing and sinks are
// built on top of it.
package stats

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// Counter only goes up (until the admin resets it).
type Counter struct {
	value atomic.Uint64
	used  atomic.Bool
}

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) {
	c.value.Add(n)
	if !c.used.Load() {
		c.used.Store(true)
	}
}

// Value returns the current count.
func (c *Counter) Value() uint64 { return c.value.Load() }

// Used reports whether the counter was ever incremented.
func (c *Counter) Used() bool { return c.used.Load() }

// Gauge holds a value that goes up and down.
type Gauge struct {
	value atomic.Int64
	used  atomic.Bool
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

func (g *Gauge) markUsed() {
	if !g.used.Load() {
		g.used.Store(true)
	}
}

// Value returns the current value.
func (g *Gauge) Value() int64 { return g.value.Load() }

// Used reports whether the gauge was ever changed.
func (g *Gauge) Used() bool { return g.used.Load() }

// Store owns every stat of one server.
type Store struct {
	mu       sync.Mutex
	counters map[string]*Counter
	gauges   map[string]*Gauge
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{counters: map[string]*Counter{}, gauges: map[string]*Gauge{}}
}

// Counter returns the counter with the full name, creating it on first use.
func (s *Store) Counter(name string) *Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.counters[name]
	if !ok {
		c = &Counter{}
		s.counters[name] = c
	}
	return c
}

// Gauge returns the gauge with the full name, creating it on first use.
func (s *Store) Gauge(name string) *Gauge {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.gauges[name]
	if !ok {
		g = &Gauge{}
		s.gauges[name] = g
	}
	return g
}

// CounterNames returns the names of every counter, sorted.
func (s *Store) CounterNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.counters))
}

// GaugeNames returns the names of every gauge, sorted.
func (s *Store) GaugeNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.gauges))
}

// Scope prefixes names: Scope("server.").Counter("x") is "server.x".
type Scope struct {
	store  *Store
	prefix string
}

// Scope returns a scope whose stat names start with prefix.
func (s *Store) Scope(prefix string) Scope { return Scope{store: s, prefix: prefix} }

// Counter returns the scope's counter with the given short name.
func (sc Scope) Counter(name string) *Counter { return sc.store.Counter(sc.prefix + name) }

// Gauge returns the scope's gauge with the given short name.
func (sc Scope) Gauge(name string) *Gauge { return sc.store.Gauge(sc.prefix + name) }
