package clusterspecifier_test

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/lua/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier/lua"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// ext is a plugin's extension of the given config.
func ext(t *testing.T, name string, m proto.Message) *corev3.TypedExtensionConfig {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TypedExtensionConfig{Name: name, TypedConfig: a}
}

func TestCompiler(t *testing.T) {
	reg, err := extension.New(
		extension.Of(lua.Name, clusterspecifier.Category, &luav3.LuaConfig{}, lua.Factory{}),
		extension.Of("proxy.filters.http.router", "envoy.filters.http", &routerv3.Router{}, nil),
	)
	if err != nil {
		t.Fatal(err)
	}
	script := &luav3.LuaConfig{SourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: `function envoy_on_route(h) return "picked" end`}}}
	compile := clusterspecifier.Compiler(reg, clusterspecifier.Context{Log: logr.Discard()})

	cs, err := compile(ext(t, "envoy.router.cluster_specifier_plugin.lua", script), false)
	if err != nil || cs == nil {
		t.Fatalf("the Lua plugin: %v, %v", cs, err)
	}
	if got := cs.Cluster(nil); got != "picked" {
		t.Errorf("cluster %q", got)
	}

	tests := map[string]struct {
		ext      *corev3.TypedExtensionConfig
		optional bool
		want     string // "" for a plugin left out
	}{
		"another category":           {ext: ext(t, "r", &routerv3.Router{}), want: ": Didn't find a registered implementation for 'r' with type URL: 'envoy.extensions.filters.http.router.v3.Router'"},
		"another category, optional": {ext: ext(t, "r", &routerv3.Router{}), optional: true},
		"unknown type":               {ext: ext(t, "u", &corev3.Node{}), want: "Didn't find a registered implementation for 'u'"},
		"unknown type, optional":     {ext: ext(t, "u", &corev3.Node{}), optional: true},
		"bad script":                 {ext: ext(t, "l", &luav3.LuaConfig{}), want: ".typed_config.source_code: a script is required"},
		"bad script, optional":       {ext: ext(t, "l", &luav3.LuaConfig{}), optional: true, want: ".typed_config.source_code: a script is required"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cs, err := compile(tc.ext, tc.optional)
			switch {
			case tc.want == "" && (err != nil || cs != nil):
				t.Errorf("got %v, %v; want the plugin left out", cs, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}

	if _, err := reg.Disable([]string{clusterspecifier.Category + "/" + lua.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := compile(ext(t, "l", script), false); err == nil {
		t.Error("a disabled plugin compiled")
	}
	if cs, err := compile(ext(t, "l", script), true); cs != nil || err != nil {
		t.Errorf("a disabled optional plugin: %v, %v", cs, err)
	}
}
