package server

import "github.com/outrigger-dev/outrigger/pkg/proxy/runtime"

// runtimeValues gives the connection managers the runtime's current values:
// each read takes the latest snapshot, so /runtime_modify applies at once.
type runtimeValues struct{ rt *runtime.Runtime }

// Uint64 implements httpconn.RuntimeValues.
func (v runtimeValues) Uint64(key string, def uint64) uint64 {
	return v.rt.Snapshot().Uint64(key, def)
}

// Bool implements httpconn.RuntimeValues.
func (v runtimeValues) Bool(key string, def bool) bool {
	return v.rt.Snapshot().Bool(key, def)
}

// Fraction implements runtime.FractionReader.
func (v runtimeValues) Fraction(key string) (num, den uint64, ok bool) {
	return v.rt.Snapshot().Fraction(key)
}

// Get returns key's value as text, for the filters that read numbers
// with a fraction (RuntimeDouble, RuntimePercent).
func (v runtimeValues) Get(key string) (string, bool) {
	return v.rt.Snapshot().Get(key)
}

// Snapshot returns the runtime's current snapshot, which the connection
// managers' tracing resolves its sampling keys in once per snapshot.
func (v runtimeValues) Snapshot() *runtime.Snapshot { return v.rt.Snapshot() }
