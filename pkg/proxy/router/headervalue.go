package router

import (
	"errors"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// HeaderValueText is a configured HeaderValue's value: value, or its bytes
// form raw_value, as Envoy reads them. Setting both is an error, and so
// is a raw value with a NUL, CR or LF, which no header value may hold.
// The error names the field: "raw_value: ...".
func HeaderValueText(h *corev3.HeaderValue) (string, error) {
	raw := h.GetRawValue()
	if len(raw) == 0 {
		return h.GetValue(), nil
	}
	if h.GetValue() != "" {
		return "", errors.New("raw_value: only one of value or raw_value may be set")
	}
	v := string(raw)
	if strings.ContainsAny(v, "\x00\r\n") {
		return "", errors.New("raw_value: a header value cannot contain NUL, CR or LF")
	}
	return v, nil
}
