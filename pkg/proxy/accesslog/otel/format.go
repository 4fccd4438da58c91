package otel

import (
	"errors"
	"fmt"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// errValueKind is Envoy's refusal of the other AnyValue kinds.
var errValueKind = errors.New("only string values, nested key value lists and array values are supported in OpenTelemetry access log format")

// valueKind is which AnyValue a template makes.
type valueKind uint8

const (
	stringValue valueKind = iota
	listValue
	arrayValue
)

// template is a compiled AnyValue of the configuration: a string value
// is a format string (Envoy's substitution format, missing values printed
// as "-"), key-value lists and arrays hold templates.
type template struct {
	kind valueKind
	// format is a string value's; literal is its text when it has no
	// operator (rendered without formatting).
	format    *accesslog.Formatter
	literal   string
	isLiteral bool
	list      []keyTemplate
	array     []template
}

// keyTemplate is one KeyValue of a key-value list template.
type keyTemplate struct {
	key   string
	value template
}

// compileValue compiles an AnyValue; errors name the field below it.
func compileValue(v *commonpb.AnyValue, f accesslog.Formatters) (template, error) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		fm, err := accesslog.TextWith(x.StringValue, false, f)
		if err != nil {
			return template{}, fmt.Errorf("string_value: %w", err)
		}
		t := template{kind: stringValue, format: fm}
		t.literal, t.isLiteral = fm.Literal()
		return t, nil
	case *commonpb.AnyValue_KvlistValue:
		l, err := compileList(x.KvlistValue, f)
		if err != nil {
			return template{}, fmt.Errorf("kvlist_value.%w", err)
		}
		return template{kind: listValue, list: l}, nil
	case *commonpb.AnyValue_ArrayValue:
		t := template{kind: arrayValue}
		for i, av := range x.ArrayValue.GetValues() {
			c, err := compileValue(av, f)
			if err != nil {
				return template{}, fmt.Errorf("array_value.values[%d].%w", i, err)
			}
			t.array = append(t.array, c)
		}
		return t, nil
	case nil:
		return template{}, fmt.Errorf("value: must be set (%w)", errValueKind)
	}
	m := v.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("value"))
	return template{}, fmt.Errorf("%s: %w", fd.Name(), errValueKind)
}

// compileList compiles a KeyValueList; errors name the field below it.
func compileList(l *commonpb.KeyValueList, f accesslog.Formatters) ([]keyTemplate, error) {
	out := make([]keyTemplate, 0, len(l.GetValues()))
	for i, kv := range l.GetValues() {
		t, err := compileValue(kv.GetValue(), f)
		if err != nil {
			return nil, fmt.Errorf("values[%d].value.%w", i, err)
		}
		out = append(out, keyTemplate{key: kv.GetKey(), value: t})
	}
	return out, nil
}

// render makes the template's value for e. buf is scratch space,
// returned for reuse; the value owns its strings.
func (t *template) render(buf []byte, e *accesslog.Entry) (*commonpb.AnyValue, []byte) {
	switch t.kind {
	case listValue:
		var kvs []*commonpb.KeyValue
		kvs, buf = renderList(t.list, buf, e)
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}, buf
	case arrayValue:
		vs := make([]*commonpb.AnyValue, len(t.array))
		for i := range t.array {
			vs[i], buf = t.array[i].render(buf, e)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}, buf
	}
	if t.isLiteral {
		return stringAny(t.literal), buf
	}
	buf = t.format.Append(buf[:0], e)
	return stringAny(string(buf)), buf
}

// renderList makes the KeyValues of a list template for e.
func renderList(l []keyTemplate, buf []byte, e *accesslog.Entry) ([]*commonpb.KeyValue, []byte) {
	kvs := make([]*commonpb.KeyValue, len(l))
	for i := range l {
		var v *commonpb.AnyValue
		v, buf = l[i].value.render(buf, e)
		kvs[i] = &commonpb.KeyValue{Key: l[i].key, Value: v}
	}
	return kvs, buf
}

// stringAny is an AnyValue holding s.
func stringAny(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
