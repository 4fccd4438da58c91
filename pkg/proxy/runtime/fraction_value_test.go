package runtime

import (
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
)

// TestFractionalValues checks Envoy's FractionalPercent runtime values: a
// static layer's object with a numerator or denominator (or no field) is
// one value, kept as block YAML, and any layer's value that reads as a
// FractionalPercent is one, which featureEnabled prefers to an integer.
func TestFractionalValues(t *testing.T) {
	rt, err := New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		staticLayer(t, "static", map[string]any{
			"fault": map[string]any{
				"abort":  map[string]any{"numerator": 25, "denominator": "TEN_THOUSAND"},
				"delay":  map[string]any{"numerator": 3},
				"nested": map[string]any{"plain": 7},
			},
			"empty":   map[string]any{},
			"unknown": map[string]any{"numerator": 1, "colour": "red"},
			"toobig":  map[string]any{"numerator": 1, "denominator": "BILLION"},
		}),
		adminLayer("admin"),
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := rt.Snapshot()
	if v, _ := snap.Get("fault.abort"); v != "denominator: TEN_THOUSAND\nnumerator: 25" {
		t.Errorf("raw value = %q", v)
	}
	if v, ok := snap.Get("fault.nested.plain"); !ok || v != "7" {
		t.Errorf("an object without numerator or denominator is still a subtree: %q %v", v, ok)
	}
	for key, want := range map[string][3]uint64{
		"fault.abort":        {25, 10_000, 1},
		"fault.delay":        {3, 100, 1},
		"empty":              {0, 100, 1},
		"unknown":            {0, 0, 0},
		"toobig":             {0, 0, 0},
		"fault.nested.plain": {0, 0, 0},
	} {
		n, d, ok := snap.Fraction(key)
		if n != want[0] || d != want[1] || ok != (want[2] == 1) {
			t.Errorf("Fraction(%q) = %d/%d %v, want %v", key, n, d, ok, want)
		}
	}

	// An admin value in YAML, flow or block, is one too; an integer is
	// not (featureEnabled reads it as a percentage).
	if err := rt.Modify(map[string]string{"a": "{numerator: 5, denominator: MILLION}", "b": "numerator: 1\ndenominator: HUNDRED", "c": "42"}); err != nil {
		t.Fatal(err)
	}
	snap = rt.Snapshot()
	if n, d, ok := snap.Fraction("a"); !ok || n != 5 || d != 1_000_000 {
		t.Errorf("a = %d/%d %v", n, d, ok)
	}
	if n, d, ok := snap.Fraction("b"); !ok || n != 1 || d != 100 {
		t.Errorf("b = %d/%d %v", n, d, ok)
	}
	if _, _, ok := snap.Fraction("c"); ok {
		t.Error("an integer is not a fraction")
	}

	// Enabled prefers the fraction to the default and to an integer
	// reading.
	f := Fraction{Key: "fault.abort", Numerator: 100, Denominator: 100}
	if !f.Enabled(snap, 10_024) || f.Enabled(snap, 10_025) {
		t.Error("the runtime fraction 25/10000 must replace the default 100%")
	}
	f = Fraction{Key: "c", Numerator: 0, Denominator: 100}
	if !f.Enabled(snap, 41) || f.Enabled(snap, 42) {
		t.Error("an integer value stays a percentage")
	}
}
