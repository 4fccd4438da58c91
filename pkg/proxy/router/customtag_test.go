package router

import (
	"strings"
	"testing"

	tracingtagsv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
)

// TestCompileCustomTagValue: a value with operators is a format, plain
// text a literal, an empty value sets nothing, and a bad format is
// refused with its path.
func TestCompileCustomTagValue(t *testing.T) {
	compile := func(v string) (CustomTag, error) {
		return CompileCustomTag(&tracingtagsv3.CustomTag{Tag: "k", Type: &tracingtagsv3.CustomTag_Value{Value: v}})
	}
	ct, err := compile("%PROTOCOL%")
	if err != nil || ct.Format == nil || ct.Value != "" {
		t.Fatalf("operators: %+v, %v; want a format", ct, err)
	}
	if ct, err = compile("edge"); err != nil || ct.Format != nil || ct.Value != "edge" {
		t.Fatalf("plain text: %+v, %v; want the literal edge", ct, err)
	}
	if ct, err = compile(""); err != nil || ct.Format != nil || ct.Value != "" {
		t.Fatalf("empty: %+v, %v; want no value", ct, err)
	}
	if _, err = compile("%NO_SUCH_OPERATOR%"); err == nil || !strings.HasPrefix(err.Error(), "value: ") {
		t.Fatalf("bad format: %v; want a value: error", err)
	}
	if ct, _ = compile("%UPSTREAM_LOCAL_ADDRESS%"); !TagsReadUpstreamConnection([]CustomTag{ct}) {
		t.Fatal("a tag formatting the upstream connection's address does not say it reads it")
	}
}
