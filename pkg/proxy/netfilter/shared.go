package netfilter

import (
	goruntime "runtime"
	"sync"
	"weak"
)

// Shared holds values that filters share beyond their filter chain, such
// as local_ratelimit's share_key buckets, as Envoy's singleton manager
// holds them: a value lives as long as a filter holds it, so a listener
// update that keeps a filter's configuration keeps its value too, the new
// filter finding what the old one still holds. The server owns one.
type Shared struct {
	mu sync.Mutex
	// m holds a weak.Pointer to each value, by key.
	m map[any]any
}

// NewShared returns an empty Shared.
func NewShared() *Shared { return &Shared{m: map[any]any{}} }

// LoadShared returns the value under key that some filter still holds,
// or else a new one from newValue, which it keeps under key until no
// filter holds it. Keys are comparable values of a type of the caller's
// own. A nil s shares nothing: every call makes a value.
func LoadShared[T any](s *Shared, key any, newValue func() *T) *T {
	if s == nil {
		return newValue()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.m[key].(weak.Pointer[T]); ok {
		if v := w.Value(); v != nil {
			return v
		}
	}
	v := newValue()
	w := weak.Make(v)
	s.m[key] = w
	goruntime.AddCleanup(v, func(key any) { s.forget(key, w) }, key)
	return v
}

// forget drops key once the value w points to is gone, unless a newer
// value has taken its place.
func (s *Shared) forget(key any, w any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] == w {
		delete(s.m, key)
	}
}

// Len is the number of values held (for tests).
func (s *Shared) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
