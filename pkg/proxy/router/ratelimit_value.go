package router

import (
	"errors"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// FormatDescriptorValuesKey is Envoy's runtime feature that makes the
// descriptor_value of generic_key, header_value_match and
// query_parameter_value_match a format (off by default: the value is
// used as it is, and their default_value never applies).
// remote_address_match formats its value whatever the feature says.
const FormatDescriptorValuesKey = "envoy.reloadable_features.enable_formatter_for_ratelimit_action_descriptor_value"

// formatDescriptorValuesProxyKey is its proxy. spelling, which wins.
const formatDescriptorValuesProxyKey = "proxy.reloadable_features.enable_formatter_for_ratelimit_action_descriptor_value"

// FormatDescriptorValues reports whether the runtime rt (a value with a
// Bool(key, def) method; anything else has no flags) turns the feature
// FormatDescriptorValuesKey on, for DescriptorInput.FormatValues.
func FormatDescriptorValues(rt any) bool {
	b, ok := rt.(interface {
		Bool(key string, def bool) bool
	})
	if !ok {
		return false
	}
	return b.Bool(formatDescriptorValuesProxyKey, b.Bool(FormatDescriptorValuesKey, false))
}

// descriptorValue is an action's descriptor_value: literal text, or a
// format rendered from the request (with command operators such as
// %REQ(x-user)%), and the default_value that replaces an empty result.
type descriptorValue struct {
	literal string
	format  *accesslog.Formatter
	def     string
	// flagged values are formatted only with FormatDescriptorValuesKey.
	flagged bool
}

// compileDescriptorValue compiles a descriptor_value and default_value.
// A flagged value that does not parse as a format stays literal (Envoy
// parses it only with the feature on); an unflagged one is an error
// naming descriptor_value.
func compileDescriptorValue(value, def string, flagged bool) (descriptorValue, error) {
	v := descriptorValue{literal: value, def: def, flagged: flagged}
	if !strings.Contains(value, "%") {
		return v, nil
	}
	f, err := accesslog.Text(value, true)
	if err != nil {
		if flagged {
			return v, nil
		}
		return v, errors.New("descriptor_value: " + err.Error())
	}
	if _, literal := f.Literal(); !literal {
		v.format = f
	}
	return v, nil
}

// formats reports whether the value may need the request's entry.
func (v *descriptorValue) formats() bool { return v.format != nil }

// value is the descriptor value for the request in: ok is false when
// the result is empty and there is no default_value, which drops the
// descriptor, as in Envoy.
func (v *descriptorValue) value(in *DescriptorInput) (string, bool) {
	if v.flagged && !in.FormatValues {
		return v.literal, true
	}
	s := v.literal
	if v.format != nil {
		e := in.Entry
		if e == nil {
			e = &accesslog.Entry{}
		}
		s = string(v.format.AppendValue(nil, e))
	}
	switch {
	case s != "":
		return s, true
	case v.def != "":
		return v.def, true
	}
	return "", false
}
