package stats

import "sync/atomic"

// TextReadout holds a string, such as a version or a configuration name.
type TextReadout struct {
	value  atomic.Pointer[string]
	store  *Store // nil for a readout the stats matcher rejected
	parent uint32
	meta   atomic.Uint32 // last name segment id | usedBit
}

// Set replaces the value.
func (t *TextReadout) Set(v string) {
	t.value.Store(&v)
	if t.meta.Load()&usedBit == 0 {
		markUsed(t.store, KindTextReadout, t.parent, &t.meta)
	}
}

// Value returns the current value, empty if never set.
func (t *TextReadout) Value() string {
	if p := t.value.Load(); p != nil {
		return *p
	}
	return ""
}

// Used reports whether the readout was ever set.
func (t *TextReadout) Used() bool { return t.meta.Load()&usedBit != 0 }
