package router

import (
	"errors"
	"fmt"
	"os"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tracingtagsv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// Fraction is a sampling percentage as Envoy evaluates it: a random value
// modulo Den below Num.
type Fraction struct{ Num, Den uint64 }

// CustomTag is a tracing custom tag: a literal or environment value
// (resolved at load, as Envoy does), or a request header's (Header set,
// Value its default), or metadata's (Metadata set), or a format's (Format
// set: CustomTag.value, formatted as the access log is, a missing value
// printing as nothing).
type CustomTag struct {
	Tag, Value, Header string
	Metadata           *accesslog.MetadataTag
	Format             *accesslog.Formatter
	// Type is value_type: the type tracers with typed attributes export
	// the value as.
	Type TagType
}

// TagType is a custom tag's value_type (the tracing package's ValueType,
// which this package cannot import).
type TagType uint8

// The custom tags' value types.
const (
	TagString TagType = iota
	TagInt
	TagDouble
	TagBool
)

// RouteTracing is a route's tracing: sampling that replaces the connection
// manager's for its requests (each unset percentage is 100%, as in
// Envoy), custom tags added to the manager's (a tag of the same name
// wins), and span name formats that win over the manager's (nil when
// unset).
type RouteTracing struct {
	Client, Random, Overall      Fraction
	Tags                         []CustomTag
	Operation, UpstreamOperation *accesslog.Formatter
}

// readsUpstreamConnection reports whether a span name format may read the
// entry's upstream connection; a nil RouteTracing reads nothing.
func (t *RouteTracing) readsUpstreamConnection() bool {
	return t != nil && (t.Operation.ReadsUpstreamConnection() || t.UpstreamOperation.ReadsUpstreamConnection() ||
		TagsReadUpstreamConnection(t.Tags))
}

// TagsReadUpstreamConnection reports whether a custom tag's format may
// read the entry's upstream connection.
func TagsReadUpstreamConnection(tags []CustomTag) bool {
	for i := range tags {
		if tags[i].Format.ReadsUpstreamConnection() {
			return true
		}
	}
	return false
}

// OperationFormat compiles a span name format (tracing's operation and
// upstream_operation), nil when it is empty. As in Envoy's other non-log
// formats, missing values print as nothing.
func OperationFormat(format string) (*accesslog.Formatter, error) {
	if format == "" {
		return nil, nil
	}
	return accesslog.Text(format, true)
}

// fractionOf reads a FractionalPercent, 100% when unset.
func fractionOf(p *typev3.FractionalPercent) Fraction {
	if p == nil {
		return Fraction{Num: 100, Den: 100}
	}
	den := uint64(100)
	switch p.GetDenominator() {
	case typev3.FractionalPercent_TEN_THOUSAND:
		den = 10000
	case typev3.FractionalPercent_MILLION:
		den = 1000000
	}
	return Fraction{Num: uint64(p.GetNumerator()), Den: den}
}

// compileRouteTracing reads a route's tracing.
func compileRouteTracing(t *routev3.Tracing) (*RouteTracing, error) {
	rt := &RouteTracing{
		Client:  fractionOf(t.GetClientSampling()),
		Random:  fractionOf(t.GetRandomSampling()),
		Overall: fractionOf(t.GetOverallSampling()),
	}
	for i, ct := range t.GetCustomTags() {
		tag, err := CompileCustomTag(ct)
		if err != nil {
			return nil, fmt.Errorf("custom_tags[%d].%w", i, err)
		}
		rt.Tags = append(rt.Tags, tag)
	}
	var err error
	if rt.Operation, err = OperationFormat(t.GetOperation()); err != nil {
		return nil, fmt.Errorf("operation: %w", err)
	}
	if rt.UpstreamOperation, err = OperationFormat(t.GetUpstreamOperation()); err != nil {
		return nil, fmt.Errorf("upstream_operation: %w", err)
	}
	return rt, nil
}

// CompileCustomTag reads a custom tag. Errors name the field below the
// tag.
func CompileCustomTag(ct *tracingtagsv3.CustomTag) (CustomTag, error) {
	t := CustomTag{Tag: ct.GetTag()}
	if t.Tag == "" {
		return t, errors.New("tag: must be set")
	}
	switch v := ct.GetType().(type) {
	case *tracingtagsv3.CustomTag_Literal_:
		t.Value = v.Literal.GetValue()
	case *tracingtagsv3.CustomTag_Environment_:
		t.Value = os.Getenv(v.Environment.GetName())
		if t.Value == "" {
			t.Value = v.Environment.GetDefaultValue()
		}
	case *tracingtagsv3.CustomTag_RequestHeader:
		t.Header, t.Value = v.RequestHeader.GetName(), v.RequestHeader.GetDefaultValue()
	case *tracingtagsv3.CustomTag_Metadata_:
		md, err := accesslog.CompileMetadataTag(v.Metadata)
		if err != nil {
			return t, fmt.Errorf("metadata.%w", err)
		}
		t.Metadata = md
	case *tracingtagsv3.CustomTag_Value:
		f, err := OperationFormat(v.Value)
		if err != nil {
			return t, fmt.Errorf("value: %w", err)
		}
		// An empty value sets no tag; plain text is a literal, formatted
		// once.
		if f != nil {
			if lit, ok := f.Literal(); ok {
				t.Value = lit
			} else {
				t.Format = f
			}
		}
	default:
		return t, errors.New("type: one of literal, environment, request_header, metadata or value is required")
	}
	switch vt := ct.GetValueType(); vt {
	case tracingtagsv3.CustomTag_UNSPECIFIED, tracingtagsv3.CustomTag_STRING:
	case tracingtagsv3.CustomTag_INT:
		t.Type = TagInt
	case tracingtagsv3.CustomTag_DOUBLE:
		t.Type = TagDouble
	case tracingtagsv3.CustomTag_BOOL:
		t.Type = TagBool
	default:
		return t, fmt.Errorf("value_type: unknown value %d", vt)
	}
	return t, nil
}
