package tap

import (
	"fmt"
	"math/rand/v2"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// compileEnabled compiles tap_enabled: nil when unset, which taps every
// request without reading the runtime, as Envoy.
func compileEnabled(p *corev3.RuntimeFractionalPercent, field string) (*runtime.Fraction, error) {
	if p == nil {
		return nil, nil
	}
	if p.GetDefaultValue() == nil {
		return nil, fmt.Errorf("%s.default_value: required", field)
	}
	f, err := runtime.FractionOf(p.GetRuntimeKey(), p.GetDefaultValue())
	if err != nil {
		return nil, fmt.Errorf("%s.default_value.%w", field, err)
	}
	return &f, nil
}

// Sampled draws whether the tap looks at one more request (or
// connection): always without tap_enabled; with it, its share, which its
// runtime_key may override in r (Envoy's featureEnabled). A request left
// out is neither matched nor traced.
func (c *Config) Sampled(r runtime.Reader) bool {
	return c.Enabled == nil || c.Enabled.Enabled(r, rand.Uint64())
}
