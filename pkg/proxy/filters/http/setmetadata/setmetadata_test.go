package setmetadata

import (
	"strings"
	"testing"

	smv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_metadata/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func compile(t *testing.T, y string, st *stats.Store) (*filterConfig, error) {
	t.Helper()
	var c smv3.Config
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, &c); err != nil {
		t.Fatal(err)
	}
	f, err := Factory{}.Compile(&c, httpfilter.Context{Name: "sm", Stats: st, StatPrefix: "http.test."})
	if err != nil {
		return nil, err
	}
	return f.(*filterConfig), nil
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSetAndOverwrite(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, `
metadata:
- metadata_namespace: ns.a
  value: {k: v, nested: {x: 1}, list: [a]}
- metadata_namespace: ns.b
  value: {k: new}
- metadata_namespace: ns.a
  allow_overwrite: true
  value: {k: v2, nested: {z: 2}, list: [b]}
`, st)
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/")
	s.SetDynamicMetadata("ns.b", mustStruct(t, map[string]any{"k": "old", "other": "kept"}))
	c.DecodeHeaders(s)
	md := s.Metadata.GetFilterMetadata()
	got := md["ns.a"].AsMap()
	want := map[string]any{"k": "v2", "nested": map[string]any{"x": 1.0, "z": 2.0}, "list": []any{"a", "b"}}
	if !equalJSON(t, got, want) {
		t.Errorf("ns.a = %v, want %v", got, want)
	}
	if b := md["ns.b"].AsMap(); b["k"] != "old" || b["other"] != "kept" {
		t.Errorf("ns.b = %v: overwritten without allow_overwrite", b)
	}
	if v := st.Counter("http.test.set_metadata.overwrite_denied").Value(); v != 1 {
		t.Errorf("overwrite_denied = %d, want 1", v)
	}
}

func TestTypedValue(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, `
metadata:
- metadata_namespace: typed.new
  typed_value: {"@type": type.googleapis.com/google.protobuf.StringValue, value: first}
- metadata_namespace: typed.kept
  typed_value: {"@type": type.googleapis.com/google.protobuf.StringValue, value: refused}
- metadata_namespace: typed.replaced
  allow_overwrite: true
  typed_value: {"@type": type.googleapis.com/google.protobuf.UInt32Value, value: 7}
- metadata_namespace: typed.new
  value: {untyped: alongside}
`, st)
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/")
	old := &anypb.Any{TypeUrl: "type.googleapis.com/google.protobuf.StringValue"}
	s.SetTypedDynamicMetadata("typed.kept", old)
	s.SetTypedDynamicMetadata("typed.replaced", old)
	c.DecodeHeaders(s)
	typed := s.Metadata.GetTypedFilterMetadata()
	var sv wrapperspb.StringValue
	if err := typed["typed.new"].UnmarshalTo(&sv); err != nil || sv.GetValue() != "first" {
		t.Errorf("typed.new = %v (%v)", typed["typed.new"], err)
	}
	if typed["typed.kept"] != old {
		t.Errorf("typed.kept overwritten without allow_overwrite: %v", typed["typed.kept"])
	}
	var u wrapperspb.UInt32Value
	if err := typed["typed.replaced"].UnmarshalTo(&u); err != nil || u.GetValue() != 7 {
		t.Errorf("typed.replaced = %v (%v)", typed["typed.replaced"], err)
	}
	// Typed and untyped namespaces are apart.
	if got := s.Metadata.GetFilterMetadata()["typed.new"].AsMap(); got["untyped"] != "alongside" {
		t.Errorf("untyped typed.new = %v", got)
	}
	if v := st.Counter("http.test.set_metadata.overwrite_denied").Value(); v != 1 {
		t.Errorf("overwrite_denied = %d, want 1", v)
	}
}

func TestDeprecatedTopLevel(t *testing.T) {
	c, err := compile(t, `{metadata_namespace: legacy, value: {a: b}}`, stats.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/")
	s.SetDynamicMetadata("legacy", mustStruct(t, map[string]any{"a": "old", "c": "d"}))
	c.DecodeHeaders(s)
	if got := s.Metadata.GetFilterMetadata()["legacy"].AsMap(); got["a"] != "b" || got["c"] != "d" {
		t.Errorf("legacy = %v", got)
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{metadata: [{metadata_namespace: a, value: {a: b}, typed_value: {"@type": type.googleapis.com/google.protobuf.Empty}}]}`, "metadata[0].typed_value: only one of value and typed_value"},
		{`{metadata: [{value: {a: b}}]}`, "metadata[0].metadata_namespace: "},
		{`{metadata: [{metadata_namespace: a}]}`, "metadata[0]: one of value"},
		{`{value: {a: b}}`, "value: needs metadata_namespace"},
	} {
		_, err := compile(t, tc.config, stats.NewStore())
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.config, err, tc.want)
		}
	}
}

func equalJSON(t *testing.T, a, b map[string]any) bool {
	t.Helper()
	x, err := structpb.NewStruct(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := structpb.NewStruct(b)
	if err != nil {
		t.Fatal(err)
	}
	return protojson.Format(x) == protojson.Format(y)
}
