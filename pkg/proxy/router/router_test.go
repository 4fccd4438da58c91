package router

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

func direct(name string, match *routev3.RouteMatch, body string) *routev3.Route {
	return &routev3.Route{Name: name, Match: match, Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
		Status: 200, Body: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: body}},
	}}}
}

func prefix(p string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: p}}
}

func path(p string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: p}}
}

func testTable(t testing.TB) *Table {
	t.Helper()
	rc := &routev3.RouteConfiguration{Name: "local", VirtualHosts: []*routev3.VirtualHost{
		{Name: "exact", Domains: []string{"api.example.com"}, Routes: []*routev3.Route{
			direct("exact-health", path("/health"), "health"),
			direct("exact-all", prefix("/"), "exact"),
		}},
		{Name: "short-suffix", Domains: []string{"*.com"}, Routes: []*routev3.Route{direct("s", prefix("/"), "short-suffix")}},
		{Name: "long-suffix", Domains: []string{"*.example.com"}, Routes: []*routev3.Route{direct("l", prefix("/"), "long-suffix")}},
		{Name: "prefix", Domains: []string{"foo.*"}, Routes: []*routev3.Route{direct("p", prefix("/"), "prefix")}},
		{Name: "any", Domains: []string{"*"}, Routes: []*routev3.Route{direct("a", prefix("/app"), "any")}},
	}}
	table, err := Compile(rc)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func TestMatch(t *testing.T) {
	table := testTable(t)
	tests := map[string]struct {
		host, path string
		want       string // body of the matched route, "" for no match
	}{
		"exact domain, exact path":      {host: "api.example.com", path: "/health", want: "health"},
		"exact path ignores the query":  {host: "api.example.com", path: "/health?x=1", want: "health"},
		"exact path is not a prefix":    {host: "api.example.com", path: "/healthz", want: "exact"},
		"host is case insensitive":      {host: "API.Example.COM", path: "/", want: "exact"},
		"port is ignored":               {host: "api.example.com:8080", path: "/", want: "exact"},
		"longest suffix wins":           {host: "www.example.com", path: "/", want: "long-suffix"},
		"shorter suffix":                {host: "other.com", path: "/", want: "short-suffix"},
		"suffix needs a non-empty head": {host: ".com", path: "/app", want: "any"},
		"prefix wildcard":               {host: "foo.bar", path: "/", want: "prefix"},
		"catch-all":                     {host: "unknown", path: "/app/x", want: "any"},
		"catch-all with no route":       {host: "unknown", path: "/other", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := table.Match(tc.host, tc.path)
			got := ""
			if r != nil {
				got = r.Direct.Body
			}
			if got != tc.want {
				t.Errorf("Match(%q, %q) = %q, want %q", tc.host, tc.path, got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		rc      *routev3.RouteConfiguration
		wantErr string
	}{
		"duplicate domain": {
			rc: &routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{
				{Name: "a", Domains: []string{"x"}}, {Name: "b", Domains: []string{"X"}},
			}},
			wantErr: `virtual_hosts[1].domains: domain "x" is also used by virtual host "a"`,
		},
		"unsupported match": {
			rc: &routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{
				{Name: "a", Domains: []string{"*"}, Routes: []*routev3.Route{{Match: &routev3.RouteMatch{}}}},
			}},
			wantErr: "virtual_hosts[0].routes[0]: match: path specifier",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(tc.rc)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzMatch(f *testing.F) {
	for _, s := range []struct{ host, path string }{{"api.example.com", "/health"}, {"x:1", "/?"}, {"[::1]:80", "/app"}, {"", ""}} {
		f.Add(s.host, s.path)
	}
	table := testTable(f)
	f.Fuzz(func(t *testing.T, host, path string) {
		r := table.Match(host, path)
		if r != nil && r.Direct == nil {
			t.Fatalf("matched a route without an action for %q %q", host, path)
		}
	})
}
