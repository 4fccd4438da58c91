package upstream

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// LBMetadataKey is the filter_metadata key under which endpoints carry
// the metadata subsets are made of, and routes their metadata_match
// criteria.
const LBMetadataKey = "envoy.lb"

// MetadataMatch is a route's metadata_match criteria under "envoy.lb":
// the key/value pairs a host's metadata must have for the host to be in
// the subset the request goes to. It is built once, when the route is
// compiled, and then only read.
type MetadataMatch struct {
	// Criteria are sorted by name, names unique.
	Criteria []MatchCriterion
	// key is the criteria's canonical form: the subset's key.
	key string
}

// MatchCriterion is one name and value of a MetadataMatch.
type MatchCriterion struct {
	Name  string
	Value *structpb.Value
}

// NewMetadataMatch builds the criteria of the fields of a metadata_match's
// "envoy.lb" struct.
func NewMetadataMatch(fields map[string]*structpb.Value) *MetadataMatch {
	return (*MetadataMatch)(nil).Merge(fields)
}

// Merge returns the criteria with fields added, a field replacing the
// criterion of its name: how a weighted cluster's metadata_match is
// merged over its route's, as Envoy merges them. m may be nil.
func (m *MetadataMatch) Merge(fields map[string]*structpb.Value) *MetadataMatch {
	out := &MetadataMatch{}
	if m != nil {
		out.Criteria = slices.Clone(m.Criteria)
	}
	for name, v := range fields {
		if i := slices.IndexFunc(out.Criteria, func(c MatchCriterion) bool { return c.Name == name }); i >= 0 {
			out.Criteria[i].Value = v
			continue
		}
		out.Criteria = append(out.Criteria, MatchCriterion{Name: name, Value: v})
	}
	out.finish()
	return out
}

// Filter returns the criteria whose names are in names.
func (m *MetadataMatch) Filter(names []string) *MetadataMatch {
	out := &MetadataMatch{}
	for _, c := range m.Criteria {
		if slices.Contains(names, c.Name) {
			out.Criteria = append(out.Criteria, c)
		}
	}
	out.finish()
	return out
}

// Without returns the criteria without the one named name.
func (m *MetadataMatch) Without(name string) *MetadataMatch {
	out := &MetadataMatch{}
	for _, c := range m.Criteria {
		if c.Name != name {
			out.Criteria = append(out.Criteria, c)
		}
	}
	out.finish()
	return out
}

// Get returns the value of the criterion named name.
func (m *MetadataMatch) Get(name string) (*structpb.Value, bool) {
	if m == nil {
		return nil, false
	}
	for _, c := range m.Criteria {
		if c.Name == name {
			return c.Value, true
		}
	}
	return nil, false
}

// Key is the criteria's canonical form: equal criteria have equal keys,
// and a subset made of the same names and values has it as its key
// (SubsetKey).
func (m *MetadataMatch) Key() string {
	if m == nil {
		return ""
	}
	return m.key
}

// finish sorts the criteria and computes their key.
func (m *MetadataMatch) finish() {
	slices.SortFunc(m.Criteria, func(a, b MatchCriterion) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	for _, c := range m.Criteria {
		AppendSubsetKey(&b, c.Name, c.Value)
	}
	m.key = b.String()
}

// AppendSubsetKey appends one name and value, in name order, to the key
// of a subset (see MetadataMatch.Key).
func AppendSubsetKey(b *strings.Builder, name string, v *structpb.Value) {
	b.WriteString(strconv.Itoa(len(name)))
	b.WriteByte(':')
	b.WriteString(name)
	appendValueKey(b, v)
}

// ValueKey is a value's canonical form: two values have the same key
// exactly when Envoy's value comparison finds them equal (numbers by
// value, structs by their fields, lists element by element).
func ValueKey(v *structpb.Value) string {
	var b strings.Builder
	appendValueKey(&b, v)
	return b.String()
}

func appendValueKey(b *strings.Builder, v *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		n := k.NumberValue
		if n == 0 {
			n = 0 // -0 equals 0
		}
		b.WriteByte('d')
		if math.IsNaN(n) {
			b.WriteString("NaN")
		} else {
			b.WriteString(strconv.FormatFloat(n, 'g', -1, 64))
		}
		b.WriteByte(';')
	case *structpb.Value_StringValue:
		b.WriteByte('s')
		b.WriteString(strconv.Itoa(len(k.StringValue)))
		b.WriteByte(':')
		b.WriteString(k.StringValue)
	case *structpb.Value_BoolValue:
		if k.BoolValue {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		names := make([]string, 0, len(fields))
		for name := range fields {
			names = append(names, name)
		}
		slices.Sort(names)
		b.WriteByte('{')
		for _, name := range names {
			AppendSubsetKey(b, name, fields[name])
		}
		b.WriteByte('}')
	case *structpb.Value_ListValue:
		b.WriteByte('[')
		for _, e := range k.ListValue.GetValues() {
			appendValueKey(b, e)
		}
		b.WriteByte(']')
	default: // null, or no kind
		b.WriteByte('n')
	}
}
