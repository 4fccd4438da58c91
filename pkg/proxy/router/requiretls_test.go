package router

import "testing"

func TestRequireTLS(t *testing.T) {
	tbl := mustCompile(t, `
virtual_hosts:
- name: all
  domains: [all.example, "all.example:8080"]
  require_tls: ALL
  routes: [{match: {prefix: /}, route: {cluster: a}}]
- name: external
  domains: [ext.example]
  require_tls: EXTERNAL_ONLY
  routes: [{match: {prefix: /}, route: {cluster: b}}]
- name: none
  domains: ["*"]
  routes: [{match: {prefix: /}, route: {cluster: c}}]
`)
	for _, tc := range []struct {
		host    string
		headers []string
		want    string // the cluster, or the redirect's location
	}{
		{"all.example:8080", []string{"x-forwarded-proto", "http"}, "https://all.example:8080/p?q=1"},
		{"all.example", nil, "https://all.example/p?q=1"},
		{"all.example", []string{"x-forwarded-proto", "http", "x-envoy-internal", "true"}, "https://all.example/p?q=1"},
		{"all.example", []string{"x-forwarded-proto", "https"}, "a"},
		{"ext.example", []string{"x-forwarded-proto", "http"}, "https://ext.example/p?q=1"},
		{"ext.example", []string{"x-forwarded-proto", "http", "x-envoy-internal", "true"}, "b"},
		{"ext.example", []string{"x-forwarded-proto", "https"}, "b"},
		{"other.example", []string{"x-forwarded-proto", "http"}, "c"},
	} {
		req := &Request{Host: tc.host, Path: "/p?q=1", Method: "GET", Headers: newHeaders(tc.headers...)}
		r := tbl.MatchRequest(req)
		if r == nil {
			t.Fatalf("%s %v: no route", tc.host, tc.headers)
		}
		got := r.ClusterName(0)
		if r.Redirect != nil {
			if r.Redirect.Status != 301 {
				t.Errorf("%s %v: status %d", tc.host, tc.headers, r.Redirect.Status)
			}
			got = r.RedirectLocation(req, nil)
		}
		if got != tc.want {
			t.Errorf("%s %v: got %q, want %q", tc.host, tc.headers, got, tc.want)
		}
	}
}
