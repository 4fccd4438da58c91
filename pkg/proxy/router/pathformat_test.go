package router

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// TestFormatRewrites checks path_rewrite and host_rewrite formats on a
// route action and path_rewrite on a redirect: a format rendered for the
// request, the query kept, an empty path result leaving the path alone.
func TestFormatRewrites(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ['*']
  routes:
  - {name: path, match: {prefix: /p}, route: {cluster: c, path_rewrite: "/v/%REQ(x-version)%"}}
  - {name: empty, match: {prefix: /e}, route: {cluster: c, path_rewrite: "%REQ(x-none)%"}}
  - {name: host, match: {prefix: /h}, route: {cluster: c, host_rewrite: "svc-%REQ(x-tenant)%.internal"}}
  - {name: redirect, match: {prefix: /r}, redirect: {path_rewrite: "/new/%REQ(x-version)%"}}
  - {name: redirect-empty, match: {prefix: /q}, redirect: {path_rewrite: "%REQ(x-none)%"}}
`)
	entry := func(path string, kv ...string) *accesslog.Entry {
		return &accesslog.Entry{Path: path, RequestHeaders: newHeaders(kv...)}
	}
	r := table.Match("h", "/p/x?a=1")
	if !r.FormatsPath() {
		t.Fatal("FormatsPath is false")
	}
	if got := r.FormatPath(entry("/p/x?a=1", "x-version", "v2"), "/p/x?a=1"); got != "/v/v2?a=1" {
		t.Errorf("path_rewrite: %q", got)
	}
	if got := table.Match("h", "/e").FormatPath(entry("/e?b"), "/e?b"); got != "" {
		t.Errorf("an empty result: %q, want the path left alone", got)
	}
	h := table.Match("h", "/h")
	if got := h.FormatHost(entry("/h", "x-tenant", "blue")); got != "svc-blue.internal" {
		t.Errorf("host_rewrite: %q", got)
	}
	if got := h.FormatHost(entry("/h")); got != "svc--.internal" {
		t.Errorf("host_rewrite without the header: %q (Envoy's formatter prints '-')", got)
	}
	if h.FormatsPath() || table.Match("h", "/p").FormatHost(entry("/p")) != "" {
		t.Error("a route formats only what it configures")
	}
	rd := table.Match("h", "/r?x=1")
	req := &Request{Host: "a.example", Path: "/r?x=1", Scheme: "http"}
	if got := rd.RedirectLocation(req, entry("/r?x=1", "x-version", "v3")); got != "http://a.example/new/v3?x=1" {
		t.Errorf("redirect path_rewrite: %q", got)
	}
	req = &Request{Host: "a.example", Path: "/q/y?x=1", Scheme: "http"}
	if got := table.Match("h", "/q").RedirectLocation(req, nil); got != "http://a.example/q/y?x=1" {
		t.Errorf("redirect with an empty path_rewrite: %q", got)
	}
}
