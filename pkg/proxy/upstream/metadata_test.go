package upstream

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
)

func mustValue(t *testing.T, v any) *structpb.Value {
	t.Helper()
	pv, err := structpb.NewValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

func TestValueKey(t *testing.T) {
	tests := map[string]struct {
		a, b any
		want bool
	}{
		"same strings":              {"1.0", "1.0", true},
		"string and number differ":  {"1", 1.0, false},
		"numbers by value":          {1.0, 1.0, true},
		"zero and minus zero":       {0.0, math.Copysign(0, -1), true},
		"bools":                     {true, false, false},
		"null":                      {nil, nil, true},
		"structs by field":          {map[string]any{"a": 1.0, "b": "x"}, map[string]any{"b": "x", "a": 1.0}, true},
		"structs with other fields": {map[string]any{"a": 1.0}, map[string]any{"a": 1.0, "b": 2.0}, false},
		"lists in order":            {[]any{"a", "b"}, []any{"a", "b"}, true},
		"lists out of order":        {[]any{"a", "b"}, []any{"b", "a"}, false},
		"a string is not a list":    {"ab", []any{"a", "b"}, false},
		"string lengths delimit":    {[]any{"ab", "c"}, []any{"a", "bc"}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ValueKey(mustValue(t, tc.a)) == ValueKey(mustValue(t, tc.b)); got != tc.want {
				t.Errorf("ValueKey(%v) == ValueKey(%v) is %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestMetadataMatch(t *testing.T) {
	names := func(m *MetadataMatch) []string {
		var out []string
		for _, c := range m.Criteria {
			out = append(out, c.Name+"="+c.Value.GetStringValue())
		}
		return out
	}
	route := NewMetadataMatch(map[string]*structpb.Value{"v": mustValue(t, "1.0"), "stage": mustValue(t, "prod")})
	if diff := cmp.Diff([]string{"stage=prod", "v=1.0"}, names(route)); diff != "" {
		t.Errorf("criteria sorted by name (-want +got):\n%s", diff)
	}
	merged := route.Merge(map[string]*structpb.Value{"stage": mustValue(t, "canary"), "az": mustValue(t, "b")})
	if diff := cmp.Diff([]string{"az=b", "stage=canary", "v=1.0"}, names(merged)); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"stage=prod", "v=1.0"}, names(route)); diff != "" {
		t.Errorf("the merge changed the route's criteria (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"v=1.0"}, names(merged.Filter([]string{"v", "other"}))); diff != "" {
		t.Errorf("filtered (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"az=b", "v=1.0"}, names(merged.Without("stage"))); diff != "" {
		t.Errorf("without (-want +got):\n%s", diff)
	}
	same := NewMetadataMatch(map[string]*structpb.Value{"stage": mustValue(t, "prod"), "v": mustValue(t, "1.0")})
	if route.Key() != same.Key() || route.Key() == merged.Key() {
		t.Errorf("keys: %q, %q, %q: want the first two equal, the third different", route.Key(), same.Key(), merged.Key())
	}
	if v, ok := merged.Get("az"); !ok || v.GetStringValue() != "b" {
		t.Errorf("Get(az) = %v, %v", v, ok)
	}
	var none *MetadataMatch
	if _, ok := none.Get("az"); ok || none.Key() != "" {
		t.Error("a nil MetadataMatch has criteria")
	}
}
