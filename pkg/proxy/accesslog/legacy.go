//lint:file-ignore SA1019 Envoy still accepts these deprecated fields and configurations use them; this file translates them.

package accesslog

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
)

// legacyFormat compiles the deprecated FileAccessLog formats: format (an
// empty one is the default format), json_format (every value a string)
// and typed_json_format. ok is false when cfg uses none of them.
func legacyFormat(cfg *filev3.FileAccessLog) (f *Formatter, ok bool, err error) {
	switch lf := cfg.GetAccessLogFormat().(type) {
	case *filev3.FileAccessLog_Format:
		if lf.Format == "" {
			return Default(), true, nil
		}
		f, err := Text(lf.Format, false)
		if err != nil {
			return nil, true, fmt.Errorf("format: %w", err)
		}
		return f, true, nil
	case *filev3.FileAccessLog_JsonFormat:
		f, err := compileJSON(lf.JsonFormat, false, false, "json_format", nil)
		return f, true, err
	case *filev3.FileAccessLog_TypedJsonFormat:
		f, err := compileJSON(lf.TypedJsonFormat, true, false, "typed_json_format", nil)
		return f, true, err
	}
	return nil, false, nil
}

// legacyTextFormat compiles the deprecated text_format of a
// SubstitutionFormatString; ok is false when it is not set.
func legacyTextFormat(sf *corev3.SubstitutionFormatString, parsers []CommandParser) (f *Formatter, ok bool, err error) {
	tf, set := sf.GetFormat().(*corev3.SubstitutionFormatString_TextFormat)
	if !set {
		return nil, false, nil
	}
	f, err = text(tf.TextFormat, sf.GetOmitEmptyValues(), parsers)
	if err != nil {
		return nil, true, fmt.Errorf("text_format: %w", err)
	}
	return f, true, nil
}
