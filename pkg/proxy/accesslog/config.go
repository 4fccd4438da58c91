package accesslog

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// Compile builds the formatter of a file access log: format (text),
// json_format (every value a string), typed_json_format, log_format, or
// Envoy's default format when none is set. Opening cfg.Path is the
// caller's business. Errors name the field path below the FileAccessLog.
// reg holds the formatter extensions log_format may name.
func Compile(cfg *filev3.FileAccessLog, reg *extension.Registry) (*Formatter, error) {
	if f, ok, err := legacyFormat(cfg); ok {
		return f, err
	}
	if lf := cfg.GetLogFormat(); lf != nil {
		f, err := CompileSubstitution(lf, reg)
		if err != nil {
			return nil, fmt.Errorf("log_format.%w", err)
		}
		return f, nil
	}
	return Default(), nil
}

// CompileSubstitution builds a formatter from a SubstitutionFormatString:
// text_format, text_format_source (inline) or json_format, with
// omit_empty_values, and the command operators of its formatters, found
// in reg (nil has none). JSON values are typed. Errors name the field
// path below the message, without a leading dot, so callers prefix
// theirs.
func CompileSubstitution(sf *corev3.SubstitutionFormatString, reg *extension.Registry) (*Formatter, error) {
	omit := sf.GetOmitEmptyValues()
	parsers, err := compileFormatters(sf.GetFormatters(), reg)
	if err != nil {
		return nil, err
	}
	if f, ok, err := legacyTextFormat(sf, parsers); ok {
		return f, err
	}
	switch f := sf.GetFormat().(type) {
	case *corev3.SubstitutionFormatString_TextFormatSource:
		src, path, err := inlineSource(f.TextFormatSource)
		if err != nil {
			return nil, fmt.Errorf("text_format_source%s: %w", path, err)
		}
		t, err := text(src, omit, parsers)
		if err != nil {
			return nil, fmt.Errorf("text_format_source%s: %w", path, err)
		}
		return t, nil
	case *corev3.SubstitutionFormatString_JsonFormat:
		return compileJSON(f.JsonFormat, true, omit, "json_format", parsers)
	}
	return nil, errors.New("format: one of text_format, text_format_source or json_format is required")
}

// inlineSource reads an inline DataSource or an environment variable
// (read once, as Envoy reads it when the format is built); files are
// refused.
func inlineSource(ds *corev3.DataSource) (string, string, error) {
	switch s := ds.GetSpecifier().(type) {
	case *corev3.DataSource_InlineString:
		return s.InlineString, ".inline_string", nil
	case *corev3.DataSource_InlineBytes:
		return string(s.InlineBytes), ".inline_bytes", nil
	case *corev3.DataSource_EnvironmentVariable:
		// The error names the field itself: the path joins it with a dot.
		v, err := datasource.Env(s.EnvironmentVariable)
		return v, ".environment_variable", errors.Unwrap(err)
	}
	name := "specifier"
	if ds != nil {
		m := ds.ProtoReflect()
		if fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("specifier")); fd != nil {
			name = string(fd.Name())
		}
	}
	return "", "." + name, errors.New("not supported by Outrigger (only inline_string, inline_bytes and environment_variable are)")
}
