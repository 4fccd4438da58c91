package accesslog

import (
	"testing"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
)

// TestCustomTagValue: a value tag is formatted per entry as the access
// log is, a missing value printing as nothing (no tag); plain text is a
// literal; a bad format is refused with its path.
func TestCustomTagValue(t *testing.T) {
	e := &Entry{Protocol: "HTTP/1.1", RequestHeaders: headerMap{"x-tenant": "t1"}}
	tests := map[string]struct {
		value  string
		want   string
		wantOK bool
	}{
		"operators":     {value: "%PROTOCOL% for %REQ(x-tenant)%", want: "HTTP/1.1 for t1", wantOK: true},
		"missing value": {value: "%REQ(x-absent)%", want: "", wantOK: false},
		"plain text":    {value: "edge", want: "edge", wantOK: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ct, err := CompileCustomTag(&tracev3.CustomTag{Tag: "k", Type: &tracev3.CustomTag_Value{Value: tc.value}})
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := ct.Value(e); v != tc.want || ok != tc.wantOK {
				t.Fatalf("Value = %q, %v; want %q, %v", v, ok, tc.want, tc.wantOK)
			}
		})
	}
	_, err := CompileCustomTag(&tracev3.CustomTag{Tag: "k", Type: &tracev3.CustomTag_Value{Value: "%NO_SUCH_OPERATOR%"}})
	if err == nil || err.Error()[:6] != "value:" {
		t.Fatalf("CompileCustomTag(bad format) = %v; want a value: error", err)
	}
}

// TestCustomTagValueTypeRefused: an access log's custom tag with a typed
// value_type is refused with the field's path (the tracers take it); an
// explicit STRING is the default.
func TestCustomTagValueTypeRefused(t *testing.T) {
	lit := &tracev3.CustomTag_Literal_{Literal: &tracev3.CustomTag_Literal{Value: "3"}}
	if _, err := CompileCustomTag(&tracev3.CustomTag{Tag: "n", Type: lit, ValueType: tracev3.CustomTag_INT}); err == nil ||
		err.Error() != "value_type: INT is not supported by Outrigger in access logs (tracing's custom tags take it)" {
		t.Errorf("INT: err = %v", err)
	}
	if _, err := CompileCustomTag(&tracev3.CustomTag{Tag: "n", Type: lit, ValueType: tracev3.CustomTag_STRING}); err != nil {
		t.Errorf("STRING: %v", err)
	}
}
