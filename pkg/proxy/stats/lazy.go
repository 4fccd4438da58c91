package stats

import "sync/atomic"

// A declared counter is listed like any counter (at zero, never used)
// but costs 8 bytes, not a Counter's 32, until something first asks for
// it by name: Envoy creates every stat of a struct such as a cluster's
// traffic stats, and most of them stay at zero for the cluster's life
// (HTTP/3, 0-RTT, internal redirects, connections closed with requests on
// them), so 10,000 clusters would otherwise spend megabytes on zeros.
//
// Its tree entry is of kind kindLazyCounter and indexes the store's
// lazies slab, which keeps its name; the entry never changes. When the
// counter is first asked for (Scope.Counter with its name, or a
// LazyCounter's first Get) a Counter is allocated in the counters slab and
// the stub points at it: renderers resolve the stub to it, flushes and
// resets find it in the slab. That Counter is not a tree child of its own
// (its detachedBit says so), so it is listed once, through the stub.

// kindLazyCounter marks a declared counter's tree entry. It never reaches
// callers: they see KindCounter.
const kindLazyCounter Kind = KindHistogram + 1

// detachedBit, in a Counter's meta word, marks a counter listed through
// a declared counter's stub rather than as a tree child of its own.
const detachedBit = 1 << 30

// lazyStat is a declared counter's stub, one word read and written
// whole: its name (parent node << 32 | last segment id) until its
// Counter exists, then the Counter's index << 32 | lazyAllocated, the
// Counter now holding the name. It is written under Store.mu and read by
// renderers without it.
type lazyStat struct{ w atomic.Uint64 }

// lazyAllocated marks a stub whose Counter exists; segment ids never
// reach it (see maxSegments).
const lazyAllocated = 1 << 31

// statKind returns the kind callers see for an entry's kind: a declared
// counter is a counter.
func statKind(k Kind) Kind {
	if k == kindLazyCounter {
		return KindCounter
	}
	return k
}

// DeclareCounter lists the scope's counter name at zero without
// allocating it: Counter(name), or a LazyCounter's Get, allocates it when
// first called. A name that already exists, or that the stats matcher
// rejects, is left as it is.
func (sc Scope) DeclareCounter(name string) {
	s := sc.store
	s.mu.Lock()
	defer s.mu.Unlock()
	s.declareLocked(splitName(sc.prefix, name))
}

// declareLocked is DeclareCounter of the name prefix+name with s.mu held.
func (s *Store) declareLocked(prefix, name string) {
	s.lookup(rootCounters, KindCounter, kindLazyCounter, prefix, name, s.newLazy)
}

// newLazy allocates a declared counter's stub named by its parent node
// and last segment and returns its slab index. The caller holds s.mu.
func (s *Store) newLazy(parent, seg uint32) uint32 {
	i, l := s.lazies.alloc()
	l.w.Store(uint64(parent)<<32 | uint64(seg))
	return i
}

// DeclareCounters declares each of names (see DeclareCounter).
func (sc Scope) DeclareCounters(names ...string) {
	for _, name := range names {
		sc.DeclareCounter(name)
	}
}

// materialize returns the Counter of the declared counter at idx,
// allocating it on the first call. The caller holds s.mu.
func (s *Store) materialize(idx uint32) uint32 {
	l := s.lazies.at(idx)
	w := l.w.Load()
	if w&lazyAllocated != 0 {
		return uint32(w >> 32)
	}
	i, c := s.counters.alloc()
	c.store, c.parent = s, uint32(w>>32)
	c.meta.Store(uint32(w) | detachedBit)
	l.w.Store(uint64(i)<<32 | lazyAllocated)
	return i
}

// lazyStatOf returns the Counter a declared counter's stub points at, or
// the store's shared zero counter (never written) while it has none, with
// the name words to render it by: those of its Counter once it has one
// (whose meta carries the used bit), else the stub's.
func (s *Store) lazyStatOf(idx uint32) (c *Counter, parent, meta uint32) {
	w := s.lazies.at(idx).w.Load()
	if w&lazyAllocated != 0 {
		c := s.counters.at(uint32(w >> 32))
		return c, c.parent, c.meta.Load()
	}
	return &s.zero, uint32(w >> 32), uint32(w)
}

// lazyName returns the name words of the declared counter at idx (see
// lazyStatOf).
func (s *Store) lazyName(idx uint32) (parent, meta uint32) {
	_, parent, meta = s.lazyStatOf(idx)
	return parent, meta
}

// LazyCounter keeps a counter declared with Scope.DeclareCounter for a
// component that increments it: 8 bytes, nil until the first Get, which
// looks the counter up by name (allocating it) under the store's lock.
// Goroutines racing through a first Get all get the same Counter, so no
// increment is lost.
type LazyCounter struct{ c atomic.Pointer[Counter] }

// Load returns the counter once a Get has returned it, else nil: the
// fast path of a caller that builds the name only when it must.
func (l *LazyCounter) Load() *Counter { return l.c.Load() }

// Get returns the counter named name in sc, which must be the scope and
// name the counter was declared with, allocating it on the first call.
func (l *LazyCounter) Get(sc Scope, name string) *Counter {
	if c := l.c.Load(); c != nil {
		return c
	}
	c := sc.Counter(name)
	l.c.Store(c)
	return c
}
