package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
)

func staticLayer(t *testing.T, name string, v map[string]any) *bootstrapv3.RuntimeLayer {
	t.Helper()
	s, err := structpb.NewStruct(v)
	if err != nil {
		t.Fatal(err)
	}
	return &bootstrapv3.RuntimeLayer{Name: name, LayerSpecifier: &bootstrapv3.RuntimeLayer_StaticLayer{StaticLayer: s}}
}

func adminLayer(name string) *bootstrapv3.RuntimeLayer {
	return &bootstrapv3.RuntimeLayer{Name: name, LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}}}
}

func diskLayer(name, root, sub string, appendCluster bool) *bootstrapv3.RuntimeLayer {
	return &bootstrapv3.RuntimeLayer{Name: name, LayerSpecifier: &bootstrapv3.RuntimeLayer_DiskLayer_{DiskLayer: &bootstrapv3.RuntimeLayer_DiskLayer{
		SymlinkRoot: root, Subdirectory: sub, AppendServiceCluster: appendCluster,
	}}}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLayering(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"current/health_check/min_interval": "10\n",
		"current/a":                         "disk-a",
		"current/comment":                   "# placeholder\n",
		"current/svc/only_for_svc":          "yes",
	})
	tests := map[string]struct {
		layers      []*bootstrapv3.RuntimeLayer
		cluster     string
		wantNames   []string
		wantEntries []Entry
	}{
		"static then disk then admin": {
			layers: []*bootstrapv3.RuntimeLayer{
				staticLayer(t, "base", map[string]any{"a": "static-a", "nested": map[string]any{"n": 5.0, "b": true}}),
				diskLayer("disk", root, "current", false),
				adminLayer("admin"),
			},
			wantNames: []string{"base", "disk", "admin"},
			wantEntries: []Entry{
				{Key: "a", LayerValues: []string{"static-a", "disk-a", ""}, FinalValue: "disk-a"},
				{Key: "health_check.min_interval", LayerValues: []string{"", "10", ""}, FinalValue: "10"},
				{Key: "nested.b", LayerValues: []string{"true", "", ""}, FinalValue: "true"},
				{Key: "nested.n", LayerValues: []string{"5", "", ""}, FinalValue: "5"},
				{Key: "svc.only_for_svc", LayerValues: []string{"", "yes", ""}, FinalValue: "yes"},
			},
		},
		"append service cluster": {
			layers:      []*bootstrapv3.RuntimeLayer{diskLayer("disk", root, "current", true)},
			cluster:     "svc",
			wantNames:   []string{"disk"},
			wantEntries: []Entry{{Key: "only_for_svc", LayerValues: []string{"yes"}, FinalValue: "yes"}},
		},
		"missing disk directory is empty": {
			layers:      []*bootstrapv3.RuntimeLayer{diskLayer("disk", root, "absent", false)},
			wantNames:   []string{"disk"},
			wantEntries: []Entry{},
		},
		"no layers synthesises an admin layer": {
			layers:      []*bootstrapv3.RuntimeLayer{},
			wantNames:   []string{""},
			wantEntries: []Entry{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := New(&bootstrapv3.LayeredRuntime{Layers: tc.layers}, Options{ServiceCluster: tc.cluster})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantNames, r.LayerNames()); diff != "" {
				t.Errorf("layer names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEntries, r.Entries()); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := map[string]struct {
		layers  []*bootstrapv3.RuntimeLayer
		wantErr string
	}{
		"two admin layers": {
			layers:  []*bootstrapv3.RuntimeLayer{adminLayer("a"), adminLayer("b")},
			wantErr: "layered_runtime.layers[1]: too many admin layers",
		},
		"duplicate names": {
			layers:  []*bootstrapv3.RuntimeLayer{adminLayer("a"), staticLayer(t, "a", nil)},
			wantErr: `layered_runtime.layers[1].name: duplicate layer name "a"`,
		},
		"list value": {
			layers:  []*bootstrapv3.RuntimeLayer{staticLayer(t, "s", map[string]any{"k": []any{"x"}})},
			wantErr: "static_layer: k: a runtime value must be",
		},
		"empty layer": {
			layers:  []*bootstrapv3.RuntimeLayer{{Name: "x"}},
			wantErr: "needs one of static_layer, disk_layer, rtds_layer or admin_layer",
		},
		"disk without root": {
			layers:  []*bootstrapv3.RuntimeLayer{diskLayer("d", "", "x", false)},
			wantErr: "symlink_root: must be set",
		},
		"append cluster without cluster": {
			layers:  []*bootstrapv3.RuntimeLayer{diskLayer("d", t.TempDir(), "", true)},
			wantErr: "append_service_cluster needs",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(&bootstrapv3.LayeredRuntime{Layers: tc.layers}, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestModify(t *testing.T) {
	r, err := New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		staticLayer(t, "base", map[string]any{"k": "static"}),
		adminLayer("admin"),
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := r.Snapshot()
	steps := []struct {
		name      string
		pairs     map[string]string
		wantK     string
		wantNew   string
		wantAdmin int
	}{
		{name: "override a static key", pairs: map[string]string{"k": "admin", "new": "1"}, wantK: "admin", wantNew: "1", wantAdmin: 2},
		{name: "delete the override restores the static value", pairs: map[string]string{"k": ""}, wantK: "static", wantNew: "1", wantAdmin: 1},
		{name: "deleting a key the admin layer lacks is a no-op", pairs: map[string]string{"absent": ""}, wantK: "static", wantNew: "1", wantAdmin: 1},
	}
	for _, s := range steps {
		if err := r.Modify(s.pairs); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		snap := r.Snapshot()
		if got, _ := snap.Get("k"); got != s.wantK {
			t.Errorf("%s: k = %q, want %q", s.name, got, s.wantK)
		}
		if got, _ := snap.Get("new"); got != s.wantNew {
			t.Errorf("%s: new = %q, want %q", s.name, got, s.wantNew)
		}
		if got := r.AdminOverrides(); got != s.wantAdmin {
			t.Errorf("%s: admin overrides = %d, want %d", s.name, got, s.wantAdmin)
		}
	}
	// Snapshots are immutable: the one taken first still sees the start state.
	if got, _ := before.Get("k"); got != "static" {
		t.Errorf("old snapshot changed: k = %q", got)
	}
}

func TestModifyWithoutAdminLayer(t *testing.T) {
	for name, cfg := range map[string]*bootstrapv3.LayeredRuntime{
		"no layered_runtime": nil,
		"static only":        {Layers: []*bootstrapv3.RuntimeLayer{staticLayer(t, "s", map[string]any{"k": "v"})}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.HasAdminLayer() {
				t.Fatal("HasAdminLayer = true")
			}
			if err := r.Modify(map[string]string{"k": "x"}); !errors.Is(err, ErrNoAdminLayer) {
				t.Fatalf("Modify error = %v, want ErrNoAdminLayer", err)
			}
		})
	}
}

func TestSnapshotBool(t *testing.T) {
	r, err := New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		staticLayer(t, "s", map[string]any{"on": "true", "off": false, "junk": "maybe"}),
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := r.Snapshot()
	tests := map[string]struct {
		key  string
		def  bool
		want bool
	}{
		"true string":            {key: "on", def: false, want: true},
		"false bool":             {key: "off", def: true, want: false},
		"unparsable uses def":    {key: "junk", def: true, want: true},
		"missing uses def":       {key: "absent", def: true, want: true},
		"missing uses def false": {key: "absent", def: false, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := snap.Bool(tc.key, tc.def); got != tc.want {
				t.Errorf("Bool(%q, %v) = %v, want %v", tc.key, tc.def, got, tc.want)
			}
		})
	}
}

func TestSnapshotUint64(t *testing.T) {
	r, err := New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		staticLayer(t, "s", map[string]any{"int": 500, "str": "7", "frac": 2.9, "neg": -3, "junk": "many", "huge": "18446744073709551615"}),
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := r.Snapshot()
	tests := map[string]struct {
		key       string
		def, want uint64
	}{
		"a number":              {key: "int", def: 1, want: 500},
		"a numeric string":      {key: "str", def: 1, want: 7},
		"a fraction is dropped": {key: "frac", def: 1, want: 2},
		"a negative uses def":   {key: "neg", def: 9, want: 9},
		"unparsable uses def":   {key: "junk", def: 9, want: 9},
		"missing uses def":      {key: "absent", def: 4, want: 4},
		"the largest is kept":   {key: "huge", def: 1, want: 1<<64 - 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := snap.Uint64(tc.key, tc.def); got != tc.want {
				t.Errorf("Uint64(%q, %d) = %d, want %d", tc.key, tc.def, got, tc.want)
			}
		})
	}
}

func TestModifyRejectsBadInputAtomically(t *testing.T) {
	r, err := New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{adminLayer("admin")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]map[string]string{
		"invalid UTF-8 value": {"good": "1", "k": "\xff"},
		"invalid UTF-8 key":   {"good": "1", "\xff": "1"},
		"empty key":           {"good": "1", "": "1"},
	}
	for name, pairs := range tests {
		t.Run(name, func(t *testing.T) {
			if err := r.Modify(pairs); err == nil {
				t.Fatal("Modify accepted bad input")
			}
			if _, ok := r.Snapshot().Get("good"); ok {
				t.Fatal("a refused Modify changed the runtime")
			}
		})
	}
}

// TestRTDSLayer: an RTDS layer is empty until its resource comes, then
// holds the resource's layer in its place among the others, replaced
// whole by each update; a bad layer keeps the values in force.
func TestRTDSLayer(t *testing.T) {
	rtds := &bootstrapv3.RuntimeLayer{Name: "dynamic", LayerSpecifier: &bootstrapv3.RuntimeLayer_RtdsLayer_{RtdsLayer: &bootstrapv3.RuntimeLayer_RtdsLayer{
		Name: "dynamic", RtdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
	}}}
	r, err := New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		staticLayer(t, "base", map[string]any{"k": "static", "s": "kept"}),
		rtds,
		adminLayer("admin"),
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.LayerNames(); !slices.Equal(got, []string{"base", "dynamic", "admin"}) {
		t.Errorf("layers %v", got)
	}
	get := func(k string) string {
		v, _ := r.Snapshot().Get(k)
		return v
	}
	if get("k") != "static" {
		t.Errorf("before any update: k = %q, want the static value", get("k"))
	}
	layer, err := structpb.NewStruct(map[string]any{"k": "rtds", "re2.max_program_size.error_level": 1048576, "n": map[string]any{"a": true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetRTDSLayer(1, layer); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"k": "rtds", "s": "kept", "re2.max_program_size.error_level": "1048576", "n.a": "true"} {
		if got := get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	// The admin layer, after it, still wins.
	if err := r.Modify(map[string]string{"k": "admin"}); err != nil {
		t.Fatal(err)
	}
	if get("k") != "admin" {
		t.Errorf("k = %q, want the admin layer's", get("k"))
	}
	if err := r.Modify(map[string]string{"k": ""}); err != nil {
		t.Fatal(err)
	}
	bad, err := structpb.NewStruct(map[string]any{"k": []any{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetRTDSLayer(1, bad); err == nil || !strings.Contains(err.Error(), "layer: k: a runtime value must be") {
		t.Errorf("a list value: error %v", err)
	}
	if get("k") != "rtds" {
		t.Errorf("after a refused update: k = %q, want the values in force", get("k"))
	}
	if err := r.SetRTDSLayer(0, layer); err == nil || !strings.Contains(err.Error(), "layered_runtime.layers[0] is not an RTDS layer") {
		t.Errorf("a static layer's index: error %v", err)
	}
	// A removed resource empties the layer.
	if err := r.SetRTDSLayer(1, nil); err != nil {
		t.Fatal(err)
	}
	if get("k") != "static" || get("n.a") != "" {
		t.Errorf("after removal: k = %q, n.a = %q; want the static value and nothing", get("k"), get("n.a"))
	}
}
