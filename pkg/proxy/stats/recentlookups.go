package stats

import (
	"cmp"
	"slices"
	"sync"
)

// RecentLookupsCapacity is the number of names /stats/recentlookups/enable
// tracks, as in Envoy.
const RecentLookupsCapacity = 100

// Lookup is one name looked up by string, and how many times.
type Lookup struct {
	Name  string
	Count uint64
}

// recentLookups counts stat lookups by name (the slow path that components
// should avoid on the request path). The total always accumulates; names
// are only kept while a capacity is set, evicting the least recently used.
type recentLookups struct {
	mu       sync.Mutex
	capacity int
	total    uint64
	tick     uint64
	names    map[string]*lookupEntry
}

type lookupEntry struct {
	count    uint64
	lastUsed uint64
}

// record counts a lookup of prefix+name; the name is only built while
// names are tracked.
func (r *recentLookups) record(prefix, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if r.capacity == 0 {
		return
	}
	name = prefix + name
	r.tick++
	if e, ok := r.names[name]; ok {
		e.count++
		e.lastUsed = r.tick
		return
	}
	if len(r.names) >= r.capacity {
		var oldest string
		var at uint64
		for n, e := range r.names {
			if oldest == "" || e.lastUsed < at {
				oldest, at = n, e.lastUsed
			}
		}
		delete(r.names, oldest)
	}
	if r.names == nil {
		r.names = map[string]*lookupEntry{}
	}
	r.names[name] = &lookupEntry{count: 1, lastUsed: r.tick}
}

func (r *recentLookups) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total = 0
	r.names = nil
}

// SetRecentLookupsCapacity sets how many names are tracked: 0 disables
// tracking and forgets the names (the total keeps counting), as
// /stats/recentlookups/disable does; RecentLookupsCapacity enables it.
func (s *Store) SetRecentLookupsCapacity(n int) {
	r := &s.lookups
	r.mu.Lock()
	defer r.mu.Unlock()
	r.capacity = max(n, 0)
	if r.capacity == 0 {
		r.names = nil
	}
}

// ClearRecentLookups forgets the tracked names and zeroes the total
// (/stats/recentlookups/clear).
func (s *Store) ClearRecentLookups() { s.lookups.clear() }

// RecentLookups returns the tracked names ordered by ascending count (then
// name), the total number of lookups, and whether tracking is enabled.
func (s *Store) RecentLookups() (names []Lookup, total uint64, enabled bool) {
	r := &s.lookups
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, e := range r.names {
		names = append(names, Lookup{Name: n, Count: e.count})
	}
	slices.SortFunc(names, func(a, b Lookup) int {
		return cmp.Or(cmp.Compare(a.Count, b.Count), cmp.Compare(a.Name, b.Name))
	})
	return names, r.total, r.capacity > 0
}

// recordMany counts n lookups at once when no names are tracked, and
// reports whether it did: while names are tracked each lookup must be
// recorded by its name (see record).
func (r *recentLookups) recordMany(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.capacity != 0 {
		return false
	}
	r.total += uint64(n)
	return true
}
