package runtime

import (
	"fmt"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// Reader reads runtime values as integers: a Snapshot, or a server's view
// of its latest one.
type Reader interface {
	// Uint64 returns key's value as an integer, def when it has none.
	Uint64(key string, def uint64) uint64
}

// FractionReader is a Reader that also reads FractionalPercent values (a
// Snapshot does); Fraction.Enabled uses them when the reader has them.
type FractionReader interface {
	Reader
	// Fraction returns key's value when it is a FractionalPercent.
	Fraction(key string) (num, den uint64, ok bool)
}

// unset is the default a Fraction reads its key with, to tell a key with
// no integer value from one that holds a number.
const unset = ^uint64(0)

// Fraction is a percentage of requests that a runtime key may override:
// Envoy's featureEnabled(key, FractionalPercent default), as a
// RuntimeFractionalPercent, or a fault's percentage under its runtime key,
// configures it. The zero value never fires.
type Fraction struct {
	// Key is the runtime key; "" means the default always applies.
	Key string
	// Numerator out of Denominator (100, 10000 or 1000000) is the
	// default share.
	Numerator, Denominator uint64
}

// FractionOf compiles a FractionalPercent read under key. A nil percent
// is Envoy's default message: 0 out of 100. Errors name the field below
// the percent ("denominator: ...").
func FractionOf(key string, p *typev3.FractionalPercent) (Fraction, error) {
	f := Fraction{Key: key, Numerator: uint64(p.GetNumerator())}
	d, err := denominator(p.GetDenominator())
	if err != nil {
		return f, err
	}
	f.Denominator = d
	return f, nil
}

// denominator is the value of a FractionalPercent's denominator.
func denominator(d typev3.FractionalPercent_DenominatorType) (uint64, error) {
	switch d {
	case typev3.FractionalPercent_HUNDRED:
		return 100, nil
	case typev3.FractionalPercent_TEN_THOUSAND:
		return 10_000, nil
	case typev3.FractionalPercent_MILLION:
		return 1_000_000, nil
	}
	return 0, fmt.Errorf("denominator: unknown value %d", int32(d))
}

// Enabled draws whether this request is in the share, as Envoy's
// featureEnabled does: a FractionalPercent value of the runtime key
// replaces the default; else an integer value is a percentage (above 100:
// always); else the default applies. random is a uniformly random number.
// A nil r reads no runtime.
func (f Fraction) Enabled(r Reader, random uint64) bool {
	num, den := f.Numerator, f.Denominator
	if f.Key != "" && r != nil {
		if n, d, ok := Override(r, f.Key); ok {
			num, den = n, d
		}
	}
	return den != 0 && random%den < num
}

// Override is the share a runtime key sets in r, as Enabled reads it: a
// FractionalPercent value, else an integer percentage (above 100: 1 out
// of 1, always); ok is false when the key does not override the default.
// A caller that evaluates a key for every request may resolve it once
// per snapshot with this, and draw with den != 0 && random%den < num.
func Override(r Reader, key string) (num, den uint64, ok bool) {
	if fr, isFR := r.(FractionReader); isFR {
		if n, d, ok := fr.Fraction(key); ok {
			return n, d, true
		}
	}
	v := r.Uint64(key, unset)
	switch {
	case v == unset:
		return 0, 0, false
	case v > 100:
		return 1, 1, true
	}
	return v, 100, true
}
