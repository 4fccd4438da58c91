package accesslog

import (
	"errors"
	"fmt"
	"os"
	"strings"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
)

// CustomTag is a compiled custom_tags entry of the gRPC access loggers: a
// literal, an environment variable read when the configuration loads (as
// Envoy reads it), a request header, metadata, or a format (value).
type CustomTag struct {
	// Tag is the tag's name.
	Tag      string
	literal  string
	header   string // lower case; empty for the other kinds
	dflt     string
	metadata *MetadataTag
	format   *Formatter
}

// CompileCustomTag compiles a CustomTag; errors name the field below it.
func CompileCustomTag(t *tracev3.CustomTag) (CustomTag, error) {
	if t.GetTag() == "" {
		return CustomTag{}, errors.New("tag: must be set")
	}
	if vt := t.GetValueType(); vt != tracev3.CustomTag_UNSPECIFIED && vt != tracev3.CustomTag_STRING {
		// Typed values are the tracers' (CustomTag's documentation names
		// no access log that reads them): refused rather than dropped.
		return CustomTag{}, fmt.Errorf("value_type: %v is not supported by Outrigger in access logs (tracing's custom tags take it)", vt)
	}
	switch k := t.GetType().(type) {
	case *tracev3.CustomTag_Literal_:
		return CustomTag{Tag: t.GetTag(), literal: k.Literal.GetValue()}, nil
	case *tracev3.CustomTag_Environment_:
		if k.Environment.GetName() == "" {
			return CustomTag{}, errors.New("environment.name: must be set")
		}
		v, ok := os.LookupEnv(k.Environment.GetName())
		if !ok {
			v = k.Environment.GetDefaultValue()
		}
		return CustomTag{Tag: t.GetTag(), literal: v}, nil
	case *tracev3.CustomTag_RequestHeader:
		if k.RequestHeader.GetName() == "" {
			return CustomTag{}, errors.New("request_header.name: must be set")
		}
		return CustomTag{Tag: t.GetTag(), header: strings.ToLower(k.RequestHeader.GetName()), dflt: k.RequestHeader.GetDefaultValue()}, nil
	case *tracev3.CustomTag_Metadata_:
		md, err := CompileMetadataTag(k.Metadata)
		if err != nil {
			return CustomTag{}, fmt.Errorf("metadata.%w", err)
		}
		return CustomTag{Tag: t.GetTag(), metadata: md}, nil
	case *tracev3.CustomTag_Value:
		// Formatted as the access log is, a missing value printing as
		// nothing (Envoy's "empty string instead of -"); plain text (or
		// nothing) is a literal.
		if k.Value == "" {
			return CustomTag{Tag: t.GetTag()}, nil
		}
		f, err := Text(k.Value, true)
		if err != nil {
			return CustomTag{}, fmt.Errorf("value: %w", err)
		}
		if lit, ok := f.Literal(); ok {
			return CustomTag{Tag: t.GetTag(), literal: lit}, nil
		}
		return CustomTag{Tag: t.GetTag(), format: f}, nil
	}
	return CustomTag{}, errors.New("type: one of literal, environment, request_header, metadata or value is required")
}

// Value is the tag's value for e; ok is false when it has none. The
// value may view e's memory.
func (t *CustomTag) Value(e *Entry) (string, bool) {
	if t.metadata != nil {
		v, ok := t.metadata.AppendValue(nil, e)
		return string(v), ok
	}
	if t.format != nil {
		v := string(t.format.AppendValue(nil, e))
		return v, v != ""
	}
	if t.header == "" {
		return t.literal, true
	}
	if e.RequestHeaders != nil {
		if v, ok := e.RequestHeaders.Get(t.header); ok {
			return v, true
		}
	}
	return t.dflt, t.dflt != ""
}
