package router

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fixedCluster is a plugin that picks one cluster, or the value of a
// header when it names one ("header:x").
type fixedCluster string

func (f fixedCluster) Cluster(r *Request) string {
	if h, ok := strings.CutPrefix(string(f), "header:"); ok {
		v, _ := r.Headers.Get(h)
		return v
	}
	return string(f)
}

// fakePlugins compiles a plugin whose typed_config is a StringValue (its
// cluster, or "fail" for an error); any other type is one Outrigger
// does not have.
func fakePlugins(ext *corev3.TypedExtensionConfig, optional bool) (ClusterSpecifier, error) {
	var v wrapperspb.StringValue
	if err := ext.GetTypedConfig().UnmarshalTo(&v); err != nil {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf(": Didn't find a registered implementation for '%s'", ext.GetName())
	}
	if v.GetValue() == "fail" {
		return nil, errors.New(".typed_config.value: bad")
	}
	return fixedCluster(v.GetValue()), nil
}

const pluginRoutes = `
cluster_specifier_plugins:
- extension:
    name: by-header
    typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: "header:x-cluster"}
- extension:
    name: missing
    typed_config: {"@type": type.googleapis.com/google.protobuf.Struct, value: {}}
  is_optional: true
virtual_hosts:
- name: vh
  domains: ["*"]
  retry_policy: {num_retries: 3}
  routes:
  - match: {prefix: /named}
    route: {cluster_specifier_plugin: by-header}
  - match: {prefix: /inline}
    route:
      inline_cluster_specifier_plugin:
        extension:
          name: fixed
          typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: inline-cluster}
  - match: {prefix: /optional}
    route: {cluster_specifier_plugin: missing}
  - match: {prefix: /optional-inline}
    route:
      inline_cluster_specifier_plugin:
        is_optional: true
        extension:
          name: gone
          typed_config: {"@type": type.googleapis.com/google.protobuf.Struct, value: {}}
  - match: {prefix: /}
    route: {cluster: fallback}
`

func TestClusterSpecifierPlugins(t *testing.T) {
	table, err := CompileWith(parseRC(t, pluginRoutes), Options{ClusterSpecifier: fakePlugins})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path, header, want string
	}{
		"named plugin reads the header": {path: "/named", header: "blue", want: "blue"},
		"named plugin, header missing":  {path: "/named", want: ""},
		"inline plugin":                 {path: "/inline", want: "inline-cluster"},
		"optional missing plugin: next": {path: "/optional", want: "fallback"},
		"optional missing inline: next": {path: "/optional-inline", want: "fallback"},
		"route without a plugin":        {path: "/other", want: "fallback"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHeaders()
			if tc.header != "" {
				h = newHeaders("x-cluster", tc.header)
			}
			req := &Request{Host: "h", Path: tc.path, Method: "GET", Headers: h}
			r := table.MatchRequest(req)
			if r == nil {
				t.Fatal("no route")
			}
			got := r.Cluster
			if r.ClusterSpecifier != nil {
				if r.Cluster != "" || r.WeightedClusters != nil || r.ClusterHeader != "" {
					t.Errorf("a plugin route has another cluster specifier: %+v", r)
				}
				got = r.ClusterSpecifier.Cluster(req)
			}
			if got != tc.want {
				t.Errorf("cluster %q, want %q", got, tc.want)
			}
		})
	}
	// A plugin route inherits its virtual host's retry policy, as any
	// route to a cluster does.
	if r := table.Match("h", "/inline"); r.RetryPolicy == nil {
		t.Error("the plugin route has no retry policy")
	}
}

// inlinePluginRoute is a route configuration whose one route has an
// inline plugin of fakePlugins configured with value.
func inlinePluginRoute(value string) string {
	return `
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route:
      inline_cluster_specifier_plugin:
        extension: {name: f, typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: ` + value + `}}`
}

func TestClusterSpecifierPluginErrors(t *testing.T) {
	tests := map[string]struct {
		yaml string
		opts Options
		want []string
	}{
		"unknown plugin name": {
			yaml: `
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster_specifier_plugin: nope}`,
			opts: Options{ClusterSpecifier: fakePlugins},
			want: []string{"virtual_hosts[0].routes[0].route.cluster_specifier_plugin: Unknown cluster specifier plugin name: nope is used in the route"},
		},
		"duplicate names": {
			yaml: `
cluster_specifier_plugins:
- extension: {name: a, typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: one}}
- extension: {name: a, typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: two}}`,
			opts: Options{ClusterSpecifier: fakePlugins},
			want: []string{`cluster_specifier_plugins[1].extension.name: "a" is the name of an earlier plugin (names must be unique)`},
		},
		"plugin not implemented": {
			yaml: `
cluster_specifier_plugins:
- extension: {name: m, typed_config: {"@type": type.googleapis.com/google.protobuf.Struct, value: {}}}`,
			opts: Options{ClusterSpecifier: fakePlugins},
			want: []string{"cluster_specifier_plugins[0].extension: Didn't find a registered implementation for 'm'"},
		},
		"inline plugin error": {
			yaml: inlinePluginRoute("fail"),
			opts: Options{ClusterSpecifier: fakePlugins},
			want: []string{"virtual_hosts[0].routes[0].route.inline_cluster_specifier_plugin.extension.typed_config.value: bad"},
		},
		"no plugin compiler": {
			yaml: inlinePluginRoute("x"),
			want: []string{"virtual_hosts[0].routes[0].route.inline_cluster_specifier_plugin.extension: cluster specifier plugins are not supported here"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := CompileWith(parseRC(t, tc.yaml), tc.opts)
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
