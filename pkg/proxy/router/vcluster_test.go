package router

import "testing"

func TestVirtualClusters(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: api
  domains: [api]
  virtual_clusters:
  - name: create-user
    headers: [{name: ":method", string_match: {exact: POST}}, {name: ":path", string_match: {prefix: /users}}]
  - name: reads
    headers: [{name: ":method", string_match: {exact: GET}}]
  routes:
  - {match: {prefix: /users}, route: {cluster: users}, stat_prefix: users}
  - {match: {prefix: /}, route: {cluster: other}}
- name: plain
  domains: ["*"]
  routes:
  - {match: {prefix: /}, route: {cluster: c}, stat_prefix: everything}
`)
	tests := map[string]struct {
		host, method, path string
		want               string
	}{
		"all headers match":       {host: "api", method: "POST", path: "/users/1", want: "create-user"},
		"the first match wins":    {host: "api", method: "GET", path: "/users/1", want: "reads"},
		"no match is other":       {host: "api", method: "POST", path: "/orders", want: OtherVirtualCluster},
		"none without any config": {host: "x", method: "GET", path: "/"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := Request{Host: tc.host, Method: tc.method, Path: tc.path}
			r := table.MatchRequest(&req)
			vc := r.VirtualHost.VirtualCluster(&req)
			got := ""
			if vc != nil {
				got = vc.Name
				if table.VirtualClusters[vc.Index] != vc {
					t.Errorf("Index %d does not find the virtual cluster in Table.VirtualClusters", vc.Index)
				}
			}
			if got != tc.want {
				t.Errorf("VirtualCluster = %q, want %q", got, tc.want)
			}
		})
	}
	if n := len(table.VirtualClusters); n != 3 {
		t.Errorf("len(Table.VirtualClusters) = %d, want 3 (two and the catch-all)", n)
	}
	for i, want := range []string{"users", "everything"} {
		r := table.StatRoutes[i]
		if r.StatPrefix != want || r.StatIndex != i {
			t.Errorf("StatRoutes[%d] = %q (index %d), want %q", i, r.StatPrefix, r.StatIndex, want)
		}
	}
	if r := table.Match("api", "/"); r.StatIndex != -1 {
		t.Errorf("a route without stat_prefix has StatIndex %d, want -1", r.StatIndex)
	}
}
