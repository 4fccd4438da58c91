package runtime

import corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

// BoolReader reads runtime values as feature flags: a Snapshot, or a
// server's view of its latest one.
type BoolReader interface {
	// Bool returns key's value as a boolean, def when it has none.
	Bool(key string, def bool) bool
}

// FeatureFlag is a compiled RuntimeFeatureFlag, Envoy's
// Runtime::FeatureFlag: Default, which a boolean value of the runtime key
// Key overrides.
type FeatureFlag struct {
	Key     string
	Default bool
}

// FeatureFlagOf compiles a RuntimeFeatureFlag. A nil one is enabled, as
// every filter that takes one defaults.
func FeatureFlagOf(p *corev3.RuntimeFeatureFlag) FeatureFlag {
	f := FeatureFlag{Key: p.GetRuntimeKey(), Default: true}
	if dv := p.GetDefaultValue(); dv != nil {
		f.Default = dv.GetValue()
	}
	return f
}

// Enabled reads the flag through r; a nil r reads no runtime.
func (f FeatureFlag) Enabled(r BoolReader) bool {
	if f.Key != "" && r != nil {
		return r.Bool(f.Key, f.Default)
	}
	return f.Default
}
