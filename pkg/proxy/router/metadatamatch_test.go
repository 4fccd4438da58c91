package router

import (
	"fmt"
	"strings"
	"testing"
)

// criteria renders metadata_match criteria as "name=value, ...", values
// as their JSON, "(none)" for no criteria.
func criteria(t *testing.T, r *Route, wc int) string {
	t.Helper()
	m := r.MetadataMatchFor(wc)
	if m == nil {
		return "(none)"
	}
	var parts []string
	for _, c := range m.Criteria {
		j, err := c.Value.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, c.Name+"="+string(j))
	}
	return strings.Join(parts, ", ")
}

// TestMetadataMatchMerge checks Envoy's documented table: a weighted
// cluster's criteria are merged over the route's and override them.
func TestMetadataMatchMerge(t *testing.T) {
	tests := []struct {
		route, cluster string // flow-style envoy.lb structs, "" for none
		want           string
	}{
		{`{stage: canary}`, `{stage: prod}`, `stage="prod"`},
		{`{v: "1.0"}`, `{stage: prod}`, `stage="prod", v="1.0"`},
		{`{v: "1.0", stage: prod}`, `{stage: canary}`, `stage="canary", v="1.0"`},
		{`{v: "1.0", stage: prod}`, `{v: "1.1", stage: canary}`, `stage="canary", v="1.1"`},
		{``, `{v: "1.0"}`, `v="1.0"`},
		{`{v: "1.0"}`, ``, `v="1.0"`},
		{``, ``, `(none)`},
	}
	for _, tc := range tests {
		t.Run(tc.route+" + "+tc.cluster, func(t *testing.T) {
			md := func(s string) string {
				if s == "" {
					return ""
				}
				return fmt.Sprintf(", metadata_match: {filter_metadata: {envoy.lb: %s}}", s)
			}
			table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {weighted_clusters: {clusters: [{name: a, weight: 1`+md(tc.cluster)+`}, {name: b, weight: 1}]}`+md(tc.route)+`}
`)
			r := table.hosts.find("x").Routes[0]
			if got := criteria(t, r, 0); got != tc.want {
				t.Errorf("weighted cluster criteria = %s, want %s", got, tc.want)
			}
			wantRoute := tc.route
			if got := criteria(t, r, 1); (wantRoute == "") != (got == "(none)") {
				t.Errorf("the other cluster's criteria = %s, want the route's %q", got, wantRoute)
			}
		})
	}
}

func TestMetadataMatchRoute(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /lb}
    route: {cluster: a, metadata_match: {filter_metadata: {envoy.lb: {version: "1.0", count: 2, enabled: true}, other: {x: y}}}}
  - match: {prefix: /other}
    route: {cluster: a, metadata_match: {filter_metadata: {other: {x: y}}}}
  - match: {prefix: /}
    route: {cluster: a}
`)
	routes := table.hosts.find("x").Routes
	for i, want := range []string{`count=2, enabled=true, version="1.0"`, `(none)`, `(none)`} {
		if got := criteria(t, routes[i], -1); got != want {
			t.Errorf("route %d criteria = %s, want %s", i, got, want)
		}
	}
}
