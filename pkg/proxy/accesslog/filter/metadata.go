package filter

import (
	"errors"
	"fmt"
	"math"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// metadata matches a value of the request's dynamic metadata: when the
// key holds a value, whether it matches; when it holds none,
// match_if_key_not_found (true by default).
type metadata struct {
	filter   string
	path     []string
	value    *valueMatcher // nil without a matcher: a present value never matches
	notFound bool
}

func compileMetadata(c *accesslogv3.MetadataFilter) (*metadata, error) {
	m := &metadata{notFound: true, filter: c.GetMatcher().GetFilter()}
	if w := c.GetMatchIfKeyNotFound(); w != nil {
		m.notFound = w.GetValue()
	}
	mm := c.GetMatcher()
	if mm == nil {
		return m, nil
	}
	if mm.GetInvert() {
		// Envoy ignores invert here; refusing it says so.
		return nil, errors.New("matcher.invert: not supported in an access-log filter (Envoy ignores it there)")
	}
	path, v, err := compileMetadataMatcher(mm)
	if err != nil {
		return nil, fmt.Errorf("matcher.%w", err)
	}
	m.path, m.value = path, v
	return m, nil
}

// compileMetadataMatcher compiles a MetadataMatcher's path and value;
// errors name the field below the matcher.
func compileMetadataMatcher(mm *matcherv3.MetadataMatcher) ([]string, *valueMatcher, error) {
	if mm.GetFilter() == "" {
		return nil, nil, errors.New("filter: must be set")
	}
	if len(mm.GetPath()) == 0 {
		return nil, nil, errors.New("path: at least one segment is required")
	}
	var path []string
	for i, seg := range mm.GetPath() {
		if seg.GetKey() == "" {
			return nil, nil, fmt.Errorf("path[%d].key: must be set", i)
		}
		path = append(path, seg.GetKey())
	}
	if mm.GetValue() == nil {
		return nil, nil, errors.New("value: required")
	}
	v, err := compileValue(mm.GetValue())
	if err != nil {
		return nil, nil, fmt.Errorf("value.%w", err)
	}
	return path, v, nil
}

// MetadataMatcher is a compiled envoy.type.matcher.v3.MetadataMatcher
// outside access-log filters (RBAC's metadata permissions and
// principals): the value at the path must match, and invert flips the
// result, a missing value included, as Envoy's Matchers::MetadataMatcher.
type MetadataMatcher struct {
	filter string
	path   []string
	value  *valueMatcher
	invert bool
}

// CompileMetadataMatcher compiles a MetadataMatcher; errors name the
// field below it.
func CompileMetadataMatcher(mm *matcherv3.MetadataMatcher) (*MetadataMatcher, error) {
	path, v, err := compileMetadataMatcher(mm)
	if err != nil {
		return nil, err
	}
	return &MetadataMatcher{filter: mm.GetFilter(), path: path, value: v, invert: mm.GetInvert()}, nil
}

// Match reports whether md matches (md may be nil: no metadata). It
// allocates nothing.
func (m *MetadataMatcher) Match(md *corev3.Metadata) bool {
	return m.value.match(lookupMetadata(md, m.filter, m.path)) != m.invert
}

func (m *metadata) Match(e *accesslog.Entry) bool {
	v := lookupMetadata(e.DynamicMetadata, m.filter, m.path)
	if v == nil || v.GetKind() == nil {
		return m.notFound
	}
	return m.value != nil && m.value.match(v)
}

// lookupMetadata finds the value at path in the filter's namespace of
// md, nil when there is none.
func lookupMetadata(md *corev3.Metadata, filter string, path []string) *structpb.Value {
	st := md.GetFilterMetadata()[filter]
	if st == nil {
		return nil
	}
	var v *structpb.Value
	for i, key := range path {
		v = st.GetFields()[key]
		if v == nil {
			return nil
		}
		if i < len(path)-1 {
			if st = v.GetStructValue(); st == nil {
				return nil
			}
		}
	}
	return v
}

// valueKind is the comparison of a valueMatcher.
type valueKind uint8

const (
	valueNull valueKind = iota
	valueDoubleRange
	valueDoubleExact
	valueString
	valueBool
	valuePresent
	valueList
	valueOr
)

// valueMatcher is a compiled ValueMatcher.
type valueMatcher struct {
	kind       valueKind
	lo, hi     float64 // range: [lo, hi)
	exact      float64
	str        router.StringMatch
	b          bool
	elem       *valueMatcher   // list: one element must match
	alternates []*valueMatcher // or: one must match
}

func compileValue(c *matcherv3.ValueMatcher) (*valueMatcher, error) {
	switch p := c.GetMatchPattern().(type) {
	case *matcherv3.ValueMatcher_NullMatch_:
		return &valueMatcher{kind: valueNull}, nil
	case *matcherv3.ValueMatcher_DoubleMatch:
		return compileDouble(p.DoubleMatch)
	case *matcherv3.ValueMatcher_StringMatch:
		sm, err := router.CompileStringMatch(p.StringMatch)
		if err != nil {
			return nil, fmt.Errorf("string_match.%w", err)
		}
		return &valueMatcher{kind: valueString, str: sm}, nil
	case *matcherv3.ValueMatcher_BoolMatch:
		return &valueMatcher{kind: valueBool, b: p.BoolMatch}, nil
	case *matcherv3.ValueMatcher_PresentMatch:
		return &valueMatcher{kind: valuePresent, b: p.PresentMatch}, nil
	case *matcherv3.ValueMatcher_ListMatch:
		if p.ListMatch.GetOneOf() == nil {
			return nil, errors.New("list_match.one_of: required")
		}
		el, err := compileValue(p.ListMatch.GetOneOf())
		if err != nil {
			return nil, fmt.Errorf("list_match.one_of.%w", err)
		}
		return &valueMatcher{kind: valueList, elem: el}, nil
	case *matcherv3.ValueMatcher_OrMatch:
		if len(p.OrMatch.GetValueMatchers()) < 2 {
			return nil, errors.New("or_match.value_matchers: at least 2 matchers are required")
		}
		v := &valueMatcher{kind: valueOr}
		for i, alt := range p.OrMatch.GetValueMatchers() {
			a, err := compileValue(alt)
			if err != nil {
				return nil, fmt.Errorf("or_match.value_matchers[%d].%w", i, err)
			}
			v.alternates = append(v.alternates, a)
		}
		return v, nil
	}
	return nil, errors.New("match_pattern: one matcher is required")
}

func compileDouble(d *matcherv3.DoubleMatcher) (*valueMatcher, error) {
	switch p := d.GetMatchPattern().(type) {
	case *matcherv3.DoubleMatcher_Range:
		if p.Range.GetStart() >= p.Range.GetEnd() {
			return nil, fmt.Errorf("double_match.range: start %v must be below end %v", p.Range.GetStart(), p.Range.GetEnd())
		}
		return &valueMatcher{kind: valueDoubleRange, lo: p.Range.GetStart(), hi: p.Range.GetEnd()}, nil
	case *matcherv3.DoubleMatcher_Exact:
		return &valueMatcher{kind: valueDoubleExact, exact: p.Exact}, nil
	}
	return nil, errors.New("double_match.match_pattern: one of range or exact is required")
}

// match applies Envoy's value matchers: each matches only a value of its
// kind.
func (m *valueMatcher) match(v *structpb.Value) bool {
	switch m.kind {
	case valueNull:
		_, ok := v.GetKind().(*structpb.Value_NullValue)
		return ok
	case valueDoubleRange:
		n, ok := v.GetKind().(*structpb.Value_NumberValue)
		return ok && !math.IsNaN(n.NumberValue) && n.NumberValue >= m.lo && n.NumberValue < m.hi
	case valueDoubleExact:
		n, ok := v.GetKind().(*structpb.Value_NumberValue)
		return ok && n.NumberValue == m.exact
	case valueString:
		s, ok := v.GetKind().(*structpb.Value_StringValue)
		return ok && m.str.Matches(s.StringValue)
	case valueBool:
		b, ok := v.GetKind().(*structpb.Value_BoolValue)
		return ok && b.BoolValue == m.b
	case valuePresent:
		return m.b && v.GetKind() != nil
	case valueList:
		l, ok := v.GetKind().(*structpb.Value_ListValue)
		if !ok {
			return false
		}
		for _, el := range l.ListValue.GetValues() {
			if m.elem.match(el) {
				return true
			}
		}
		return false
	case valueOr:
		for _, a := range m.alternates {
			if a.match(v) {
				return true
			}
		}
	}
	return false
}
