package accesslog

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestMergeMetadata(t *testing.T) {
	mk := func(m map[string]any) *structpb.Struct {
		t.Helper()
		st, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	shared := mk(map[string]any{"a": "1", "b": "1"})
	md := MergeMetadata(nil, "ns", shared)
	md = MergeMetadata(md, "ns", mk(map[string]any{"b": "2", "c": "2"}))
	md = MergeMetadata(md, "other", mk(map[string]any{"x": true}))
	if got, want := md.GetFilterMetadata()["ns"].AsMap(), map[string]any{"a": "1", "b": "2", "c": "2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ns = %v, want %v", got, want)
	}
	if got, want := md.GetFilterMetadata()["other"].AsMap(), map[string]any{"x": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("other = %v, want %v", got, want)
	}
	if got, want := shared.AsMap(), map[string]any{"a": "1", "b": "1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the first struct was modified: %v", got)
	}
}
