package router

import (
	"testing"
)

func TestValidateClusters(t *testing.T) {
	known := map[string]bool{"a": true, "b": true}
	exists := func(name string) bool { return known[name] }
	const routes = `
virtual_hosts:
- name: one
  domains: ["*"]
  routes:
  - match: {prefix: /a}
    route: {cluster: a}
  - match: {prefix: /direct}
    direct_response: {status: 200}
  - match: {prefix: /missing}
    route: {cluster: missing}
  - match: {prefix: /mirrored}
    route: {cluster: a, request_mirror_policies: [{cluster: b}, {cluster_header: x-shadow}, {cluster: no-shadow}]}
- name: two
  domains: [two.example]
  request_mirror_policies: [{cluster: vh-shadow}]
  routes:
  - match: {prefix: /}
    route:
      weighted_clusters:
        clusters:
        - {name: b, weight: 1}
        - {name: gone, weight: 1}
  - match: {prefix: /r}
    redirect: {path_redirect: /x}
`
	unknown := []string{
		"virtual_hosts[0].routes[2].route.cluster: unknown cluster 'missing'",
		"virtual_hosts[0].routes[3].route.request_mirror_policies[2].cluster: unknown shadow cluster 'no-shadow'",
		"virtual_hosts[1].request_mirror_policies[0].cluster: unknown shadow cluster 'vh-shadow'",
		"virtual_hosts[1].routes[0].route.weighted_clusters.clusters[1].name: unknown weighted cluster 'gone'",
	}
	tests := map[string]struct {
		setting   string // validate_clusters, "" when unset
		defaultOn bool
		want      []string
	}{
		"unset, inline route configuration": {defaultOn: true, want: unknown},
		"unset, discovered (RDS) default":   {defaultOn: false},
		"true":                              {setting: "validate_clusters: true\n", want: unknown},
		"false":                             {setting: "validate_clusters: false\n", defaultOn: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := ValidateClusters(parseRC(t, tc.setting+routes), tc.defaultOn, exists)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors = %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("error %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
	t.Run("every cluster known", func(t *testing.T) {
		if errs := ValidateClusters(parseRC(t, routes), true, func(string) bool { return true }); len(errs) != 0 {
			t.Fatalf("errors %v", errs)
		}
	})
}
