package netfilter

import "sync"

// State is what one filter of a filter chain keeps for as long as Envoy
// would keep the filter: when a listener update changes only its filter
// chains, Envoy updates the listener in place and the chains that did not
// change keep their filters, counts and buckets included. Outrigger
// replaces the whole listener, and the server hands each filter of such an
// unchanged chain the State of the filter it replaces; otherwise a new
// one.
type State struct {
	mu sync.Mutex
	v  any
}

// LoadState returns the value the filter keeps in s, or else a new one
// from newValue, which s keeps from then on. A nil s keeps nothing: every
// call makes a value.
func LoadState[T any](s *State, newValue func() *T) *T {
	if s == nil {
		return newValue()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.v.(*T); ok {
		return v
	}
	v := newValue()
	s.v = v
	return v
}
