package jsontometadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	j2mv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/json_to_metadata/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// entry is one value to write: its pair (namespace, key, preserve) and
// the value.
type entry struct {
	kv    *keyValue
	value *structpb.Value
}

// process applies m's rules to a body as Envoy's processBody: no body
// runs every on_missing, a body that is no JSON every on_error, a JSON
// value that is not an object every on_missing; otherwise each rule
// walks its selectors. It reports whether it wrote metadata.
func process(s httpfilter.Stream, m *matchRules, body []byte, c *counters) bool {
	if len(body) == 0 {
		c.noBody.Inc()
		return apply(s, m.allOnMissing())
	}
	doc, err := parseJSON(body)
	if err != nil {
		c.invalid.Inc()
		return apply(s, m.allOnError())
	}
	c.success.Inc()
	obj, ok := doc.(map[string]any)
	if !ok {
		return apply(s, m.allOnMissing())
	}
	var out []entry
	for i := range m.rules {
		out = m.rules[i].evaluate(obj, out)
	}
	return apply(s, out)
}

// parseJSON reads one JSON value, numbers kept as json.Number; trailing
// data makes the body invalid.
func parseJSON(body []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// evaluate walks the rule's selectors in obj and appends what it writes.
func (r *rule) evaluate(obj map[string]any, out []entry) []entry {
	node := obj
	last := len(r.selectors) - 1
	for _, key := range r.selectors[:last] {
		next, ok := node[key].(map[string]any)
		if !ok {
			return r.missing(out)
		}
		node = next
	}
	// As Envoy's handleOnPresent: once the path to the last selector is
	// there, a rule without on_present writes nothing and a constant
	// on_present value is written, whether the last key is there or not.
	if r.onPresent == nil {
		return out
	}
	if r.onPresent.value != nil {
		return append(out, entry{r.onPresent, r.onPresent.value})
	}
	v, ok := node[r.selectors[last]]
	if !ok {
		return r.missing(out)
	}
	val, write, ok := convert(v, r.onPresent.typ)
	if !ok {
		return r.missing(out)
	}
	if write {
		out = append(out, entry{r.onPresent, val})
	}
	return out
}

// missing appends the rule's on_missing value, when it has one.
func (r *rule) missing(out []entry) []entry {
	if r.onMissing == nil {
		return out
	}
	return append(out, entry{r.onMissing, r.onMissing.value})
}

// convert turns a selected JSON value into the metadata value of typ, as
// Envoy's converters: false when it cannot (an object, an array or null,
// a string that is no number, a string over maxValueLen); write false
// for an empty STRING, which writes nothing.
func convert(v any, typ j2mv3.JsonToMetadata_ValueType) (val *structpb.Value, write, ok bool) {
	switch typ {
	case j2mv3.JsonToMetadata_NUMBER:
		var f float64
		switch x := v.(type) {
		case bool:
			if x {
				f = 1
			}
		case json.Number:
			n, err := x.Float64()
			if err != nil {
				return nil, false, false
			}
			f = n
		case string:
			n, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, false, false
			}
			f = n
		default:
			return nil, false, false
		}
		return structpb.NewNumberValue(f), true, true
	case j2mv3.JsonToMetadata_STRING:
		var str string
		switch x := v.(type) {
		case bool:
			// std::to_string of a bool.
			str = "0"
			if x {
				str = "1"
			}
		case json.Number:
			if i, err := x.Int64(); err == nil && isInteger(x) {
				str = strconv.FormatInt(i, 10)
			} else {
				f, err := x.Float64()
				if err != nil {
					return nil, false, false
				}
				// std::to_string of a double: six decimals.
				str = strconv.FormatFloat(f, 'f', 6, 64)
			}
		case string:
			str = x
		default:
			return nil, false, false
		}
		if len(str) > maxValueLen {
			return nil, false, false
		}
		if str == "" {
			return nil, false, true
		}
		return structpb.NewStringValue(str), true, true
	default: // PROTOBUF_VALUE
		switch x := v.(type) {
		case bool:
			return structpb.NewBoolValue(x), true, true
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return nil, false, false
			}
			return structpb.NewNumberValue(f), true, true
		case string:
			if len(x) > maxValueLen {
				return nil, false, false
			}
			return structpb.NewStringValue(x), true, true
		}
		return nil, false, false
	}
}

// isInteger reports whether a JSON number is written as an integer.
func isInteger(n json.Number) bool {
	return !strings.ContainsAny(string(n), ".eE")
}

// allOnMissing is every rule's on_missing value.
func (m *matchRules) allOnMissing() []entry {
	var out []entry
	for i := range m.rules {
		out = m.rules[i].missing(out)
	}
	return out
}

// allOnError is every rule's on_error value.
func (m *matchRules) allOnError() []entry {
	var out []entry
	for i := range m.rules {
		if kv := m.rules[i].onErr; kv != nil {
			out = append(out, entry{kv, kv.value})
		}
	}
	return out
}

// apply writes the entries into the stream's dynamic metadata, one merge
// per namespace, in order (a later entry for a key wins); an entry that
// preserves an existing value leaves a key the stream already has. It
// reports whether it wrote anything.
func apply(s httpfilter.Stream, entries []entry) bool {
	if len(entries) == 0 {
		return false
	}
	existing := s.DynamicMetadata().GetFilterMetadata()
	var order []string
	byNS := map[string]*structpb.Struct{}
	for _, e := range entries {
		if e.kv.preserve {
			if _, ok := existing[e.kv.namespace].GetFields()[e.kv.key]; ok {
				continue
			}
		}
		st := byNS[e.kv.namespace]
		if st == nil {
			st = &structpb.Struct{Fields: map[string]*structpb.Value{}}
			byNS[e.kv.namespace] = st
			order = append(order, e.kv.namespace)
		}
		st.Fields[e.kv.key] = e.value
	}
	for _, ns := range order {
		s.SetDynamicMetadata(ns, byNS[ns])
	}
	return len(order) > 0
}
