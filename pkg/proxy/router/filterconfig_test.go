package router

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// testOptions compile a per-filter configuration of a StringValue into
// its value; "bad" is refused.
var testOptions = Options{FilterConfig: func(name string, a *anypb.Any, optional bool) (any, error) {
	var v wrapperspb.StringValue
	if err := a.UnmarshalTo(&v); err != nil {
		if optional {
			return nil, nil
		}
		return nil, errors.New(": unknown type")
	}
	if v.GetValue() == "bad" {
		return nil, errors.New(".value: bad")
	}
	return name + "=" + v.GetValue(), nil
}}

func compileWith(t *testing.T, y string) *Table {
	t.Helper()
	table, err := CompileWith(parseRC(t, y), testOptions)
	if err != nil {
		t.Fatalf("CompileWith: %v", err)
	}
	return table
}

const sv = "type.googleapis.com/google.protobuf.StringValue"
const fcType = "type.googleapis.com/envoy.config.route.v3.FilterConfig"

// TestFilterConfigLevels checks Envoy's precedence of
// typed_per_filter_config: weighted cluster, route, virtual host, route
// configuration; and FilterConfig's disabled.
func TestFilterConfigLevels(t *testing.T) {
	table := compileWith(t, `
typed_per_filter_config:
  f: {"@type": `+sv+`, value: rc}
  g: {"@type": `+sv+`, value: rc}
virtual_hosts:
- domains: ["*"]
  typed_per_filter_config:
    g: {"@type": `+sv+`, value: vh}
  routes:
  - match: {path: /route}
    typed_per_filter_config:
      f: {"@type": `+sv+`, value: route}
      h: {"@type": `+fcType+`, disabled: true}
    direct_response: {status: 200}
  - match: {path: /weighted}
    typed_per_filter_config:
      f: {"@type": `+sv+`, value: route}
    route:
      weighted_clusters:
        clusters:
        - name: a
          weight: 1
          typed_per_filter_config:
            f: {"@type": `+fcType+`, config: {"@type": `+sv+`, value: cluster}}
            g: {"@type": `+fcType+`, disabled: true}
  - match: {prefix: /}
    direct_response: {status: 200}
`)
	type want struct {
		config         any
		all            []any
		disabled, said bool
	}
	tests := map[string]struct {
		path, filter string
		cluster      int
		want         want
	}{
		"route wins":                {path: "/route", filter: "f", cluster: -1, want: want{config: "f=route", all: []any{"f=rc", "f=route"}, said: true}},
		"virtual host over global":  {path: "/route", filter: "g", cluster: -1, want: want{config: "g=vh", all: []any{"g=rc", "g=vh"}, said: true}},
		"disabled on the route":     {path: "/route", filter: "h", cluster: -1, want: want{disabled: true, said: true}},
		"no level":                  {path: "/route", filter: "x", cluster: -1},
		"weighted cluster wins":     {path: "/weighted", filter: "f", cluster: 0, want: want{config: "f=cluster", all: []any{"f=rc", "f=route", "f=cluster"}, said: true}},
		"weighted cluster disables": {path: "/weighted", filter: "g", cluster: 0, want: want{config: "g=vh", all: []any{"g=rc", "g=vh"}, disabled: true, said: true}},
		"global only":               {path: "/other", filter: "f", cluster: -1, want: want{config: "f=rc", all: []any{"f=rc"}, said: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := table.Match("h", tc.path)
			if !r.HasFilterConfigs() {
				t.Fatal("HasFilterConfigs is false")
			}
			got := want{config: r.FilterConfig(tc.filter, tc.cluster), all: r.FilterConfigs(tc.filter, tc.cluster, nil)}
			got.disabled, got.said = r.FilterDisabled(tc.filter, tc.cluster)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if name, i := table.Match("h", "/weighted").PickCluster(7); name != "a" || i != 0 {
		t.Errorf("PickCluster = %q, %d", name, i)
	}
}

func TestFilterConfigErrors(t *testing.T) {
	tests := map[string]struct {
		yaml, want string
		opts       Options
	}{
		"no compiler": {yaml: `
typed_per_filter_config:
  f: {"@type": ` + sv + `, value: x}
`, want: `typed_per_filter_config["f"]: not supported here`},
		"the compiler's error": {opts: testOptions, yaml: `
virtual_hosts:
- domains: ["*"]
  typed_per_filter_config:
    f: {"@type": ` + sv + `, value: bad}
`, want: `virtual_hosts[0].typed_per_filter_config["f"].value: bad`},
		"inside a wrapper": {opts: testOptions, yaml: `
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    direct_response: {status: 200}
    typed_per_filter_config:
      f: {"@type": ` + fcType + `, config: {"@type": ` + sv + `, value: bad}}
`, want: `virtual_hosts[0].routes[0].typed_per_filter_config["f"].config.value: bad`},
		"a wrapper without config": {opts: testOptions, yaml: `
typed_per_filter_config:
  f: {"@type": ` + fcType + `}
`, want: `typed_per_filter_config["f"].config: Empty route/virtual host per filter configuration for f filter`},
		"on a weighted cluster": {opts: testOptions, yaml: `
virtual_hosts:
- domains: ["*"]
  routes:
  - match: {prefix: /}
    route:
      weighted_clusters:
        clusters:
        - {name: a, weight: 1, typed_per_filter_config: {f: {"@type": ` + sv + `, value: bad}}}
`, want: `virtual_hosts[0].routes[0].route.weighted_clusters.clusters[0].typed_per_filter_config["f"].value: bad`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := CompileWith(parseRC(t, tc.yaml), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CompileWith = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
