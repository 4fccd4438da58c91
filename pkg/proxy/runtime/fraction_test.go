package runtime

import (
	"testing"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// values is a Reader over a map.
type values map[string]uint64

func (v values) Uint64(key string, def uint64) uint64 {
	if n, ok := v[key]; ok {
		return n
	}
	return def
}

// TestFractionEnabled checks Envoy's featureEnabled: the default share of
// random values, or the runtime key's integer percentage (above 100:
// always).
func TestFractionEnabled(t *testing.T) {
	f, err := FractionOf("k", &typev3.FractionalPercent{Numerator: 25, Denominator: typev3.FractionalPercent_TEN_THOUSAND})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		r      Reader
		random uint64
		want   bool
	}{
		"default, in":                 {random: 10_024, want: true},
		"default, out":                {random: 10_025},
		"no runtime":                  {r: nil, random: 24, want: true},
		"runtime percent, in":         {r: values{"k": 30}, random: 129, want: true},
		"runtime percent, out":        {r: values{"k": 30}, random: 130},
		"runtime zero":                {r: values{"k": 0}, random: 0},
		"runtime above 100 is always": {r: values{"k": 101}, random: 99, want: true},
		"another key is the default":  {r: values{"x": 0}, random: 24, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := f.Enabled(tc.r, tc.random); got != tc.want {
				t.Errorf("Enabled = %v, want %v", got, tc.want)
			}
		})
	}
	if (Fraction{}).Enabled(nil, 0) {
		t.Error("the zero Fraction fired")
	}
	if nilPct, _ := FractionOf("", nil); nilPct.Enabled(nil, 0) {
		t.Error("a nil percentage fired (Envoy's default is 0%)")
	}
	if _, err := FractionOf("", &typev3.FractionalPercent{Denominator: 7}); err == nil {
		t.Error("an unknown denominator was accepted")
	}
}
