package runtime

import (
	"slices"
	"strconv"
	"strings"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"
)

// A runtime value may be a FractionalPercent, as in Envoy: a static layer's
// object with a numerator or a denominator (or no field at all) is one
// value, not a subtree, and any value (from a static, disk or admin layer)
// that reads as a FractionalPercent in YAML is one. featureEnabled then
// uses it before an integer reading of the value.

// isFractionStruct reports whether a static layer's object is a
// FractionalPercent value rather than a subtree of keys.
func isFractionStruct(s *structpb.Struct) bool {
	f := s.GetFields()
	_, num := f["numerator"]
	_, den := f["denominator"]
	return len(f) == 0 || num || den
}

// fractionText renders a static layer's FractionalPercent object as the
// value's text: its fields as block YAML in key order, as Envoy keeps the
// raw value of such an entry ("{}" for an empty object).
func fractionText(s *structpb.Struct) string {
	keys := make([]string, 0, len(s.GetFields()))
	for k := range s.GetFields() {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "{}"
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteString(": ")
		switch v := s.GetFields()[k].GetKind().(type) {
		case *structpb.Value_NumberValue:
			b.WriteString(strconv.FormatFloat(v.NumberValue, 'f', -1, 64))
		case *structpb.Value_StringValue:
			b.WriteString(v.StringValue)
		case *structpb.Value_BoolValue:
			b.WriteString(strconv.FormatBool(v.BoolValue))
		default:
			// Not a FractionalPercent field's value: parseFraction
			// refuses it, as Envoy's strict parse does.
			b.WriteString("[]")
		}
	}
	return b.String()
}

// fraction is a parsed FractionalPercent value.
type fraction struct{ num, den uint64 }

// parseFraction reads a value as a FractionalPercent in YAML (or JSON),
// strictly: unknown fields, or a number or denominator out of range, make
// it not one. Plain numbers, booleans and other scalars are not.
func parseFraction(v string) (fraction, bool) {
	t := strings.TrimSpace(v)
	if t != "{}" && !strings.Contains(t, "numerator") && !strings.Contains(t, "denominator") {
		return fraction{}, false
	}
	js, err := yaml.YAMLToJSON([]byte(t))
	if err != nil || len(js) == 0 || js[0] != '{' {
		return fraction{}, false
	}
	var p typev3.FractionalPercent
	if err := protojson.Unmarshal(js, &p); err != nil {
		return fraction{}, false
	}
	d, err := denominator(p.GetDenominator())
	if err != nil {
		return fraction{}, false
	}
	return fraction{num: uint64(p.GetNumerator()), den: d}, true
}
