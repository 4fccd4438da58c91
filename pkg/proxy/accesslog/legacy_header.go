package accesslog

import (
	"encoding/json"
	"regexp"
	"strings"
)

// legacyMetadataHeader matches the JSON argument form that header values
// once used for the metadata operators, %UPSTREAM_METADATA(["ns", "key"])%,
// as Envoy's header parser finds it.
var legacyMetadataHeader = regexp.MustCompile(`%(UPSTREAM|DYNAMIC)_METADATA\(\s*(\[(?:.|\r?\n)+?\]\s*)\)%`)

// TranslateLegacyHeaderFormat rewrites the JSON argument form of
// %UPSTREAM_METADATA% and %DYNAMIC_METADATA% in a header value to the
// colon form (%UPSTREAM_METADATA(ns:key)%), as Envoy does before parsing
// request_headers_to_add and response_headers_to_add values. A value whose
// JSON is not a non-empty array of strings stays as it is, as in Envoy.
func TranslateLegacyHeaderFormat(value string) string {
	for {
		m := legacyMetadataHeader.FindStringSubmatchIndex(value)
		if m == nil {
			return value
		}
		var keys []string
		if err := json.Unmarshal([]byte(value[m[4]:m[5]]), &keys); err != nil || len(keys) == 0 {
			return value
		}
		value = value[:m[0]] + "%" + value[m[2]:m[3]] + "_METADATA(" + strings.Join(keys, ":") + ")%" + value[m[1]:]
	}
}
