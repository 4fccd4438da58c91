package filter

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

func TestMetadataValues(t *testing.T) {
	st, err := structpb.NewStruct(map[string]any{
		"user":   "alice",
		"score":  7.5,
		"admin":  true,
		"none":   nil,
		"groups": []any{"dev", "ops"},
		"nested": map[string]any{"tier": "gold"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &accesslog.Entry{DynamicMetadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.filters.http.ext_authz": st}}}
	tests := []struct {
		path  string // the matcher's path, as JSON
		value string // its value matcher, as JSON
		want  bool
	}{
		{`[{"key":"user"}]`, `{"string_match":{"exact":"alice"}}`, true},
		{`[{"key":"user"}]`, `{"string_match":{"prefix":"bo"}}`, false},
		{`[{"key":"user"}]`, `{"bool_match":true}`, false}, // a string is not a bool
		{`[{"key":"score"}]`, `{"double_match":{"range":{"start":5,"end":10}}}`, true},
		{`[{"key":"score"}]`, `{"double_match":{"exact":7.5}}`, true},
		{`[{"key":"score"}]`, `{"double_match":{"range":{"start":7.5,"end":7.6}}}`, true},
		{`[{"key":"score"}]`, `{"double_match":{"range":{"start":0,"end":7.5}}}`, false}, // end is exclusive
		{`[{"key":"admin"}]`, `{"bool_match":true}`, true},
		{`[{"key":"none"}]`, `{"null_match":{}}`, true},
		{`[{"key":"admin"}]`, `{"present_match":true}`, true},
		{`[{"key":"groups"}]`, `{"list_match":{"one_of":{"string_match":{"exact":"ops"}}}}`, true},
		{`[{"key":"groups"}]`, `{"list_match":{"one_of":{"string_match":{"exact":"qa"}}}}`, false},
		{`[{"key":"nested"},{"key":"tier"}]`, `{"string_match":{"exact":"gold"}}`, true},
		{`[{"key":"user"}]`, `{"or_match":{"value_matchers":[{"bool_match":true},{"string_match":{"suffix":"ice"}}]}}`, true},
		// Missing keys fall back to match_if_key_not_found (true here).
		{`[{"key":"missing"}]`, `{"bool_match":false}`, true},
		{`[{"key":"user"},{"key":"deeper"}]`, `{"bool_match":false}`, true},
	}
	for _, tc := range tests {
		js := `{"metadata_filter":{"matcher":{"filter":"envoy.filters.http.ext_authz","path":` + tc.path + `,"value":` + tc.value + `}}}`
		f, err := compileJSON(t, js, Context{})
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		if got := f.Match(e); got != tc.want {
			t.Errorf("path %s value %s: %v, want %v", tc.path, tc.value, got, tc.want)
		}
	}
}
