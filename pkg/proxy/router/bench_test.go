package router

import (
	"fmt"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// benchYAML is a realistic table: a few services with exact, wildcard and
// catch-all domains, prefix and regex routes, header and query matchers.
var benchYAML = func() string {
	var b strings.Builder
	b.WriteString("name: bench\nvirtual_hosts:\n")
	for i := range 8 {
		fmt.Fprintf(&b, `- name: svc%d
  domains: ["svc%d.example.com", "svc%d.example.com:8080", "svc%d.internal"]
  routes:
  - {match: {path: /healthz}, direct_response: {status: 200}}
  - {match: {prefix: /api/v2/, headers: [{name: x-canary, exact_match: "true"}]}, route: {cluster: svc%d-canary}}
  - {match: {safe_regex: {regex: "/api/v[0-9]+/users/[0-9]+"}}, route: {cluster: svc%d-users}}
  - {match: {prefix: /api/, query_parameters: [{name: debug, present_match: true}]}, route: {cluster: svc%d-debug}}
  - {match: {prefix: /api/}, route: {cluster: svc%d, timeout: 5s}}
  - {match: {prefix: /}, route: {weighted_clusters: {clusters: [{name: web%d-a, weight: 90}, {name: web%d-b, weight: 10}]}}}
`, i, i, i, i, i, i, i, i, i, i)
	}
	b.WriteString(`- name: wild
  domains: ["*.example.com", "*.example.org", "www.*"]
  routes: [{match: {prefix: /}, route: {cluster: wild}}]
- name: default
  domains: ["*"]
  routes: [{match: {prefix: /}, direct_response: {status: 404}}]
`)
	return b.String()
}()

// benchRequests are requests spread over the table's routes.
func benchRequests() []Request {
	h := staticHeaders{"x-canary": "true", "user-agent": "bench"}
	none := staticHeaders{}
	return []Request{
		{Host: "svc3.example.com", Path: "/healthz", Method: "GET", Headers: none},
		{Host: "SVC5.example.com:8080", Path: "/api/v2/orders", Method: "GET", Headers: h},
		{Host: "svc1.internal", Path: "/api/v1/users/42?expand=1", Method: "GET", Headers: none},
		{Host: "svc7.example.com", Path: "/api/items?debug", Method: "POST", Headers: none},
		{Host: "svc2.example.com", Path: "/api/items?page=3", Method: "GET", Headers: none},
		{Host: "svc0.example.com", Path: "/index.html", Method: "GET", Headers: none},
		{Host: "blog.example.org", Path: "/posts/1", Method: "GET", Headers: none},
		{Host: "unknown.test", Path: "/", Method: "GET", Headers: none},
	}
}

func BenchmarkMatch(b *testing.B) {
	table := mustCompile(b, benchYAML)
	reqs := benchRequests()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if table.MatchRequest(&reqs[i%len(reqs)]) == nil {
			b.Fatal("no route")
		}
	}
}

// manyHostsTable is a route configuration of n virtual hosts, each with an
// exact domain and a port variant and two routes, then a wildcard host
// and the catch-all: the shape of a large mesh's table, which arrives over
// RDS or sits in a static route_config (both compile with CompileWith).
func manyHostsTable(n int) *routev3.RouteConfiguration {
	rc := &routev3.RouteConfiguration{Name: "many"}
	for i := range n {
		name := fmt.Sprintf("svc%d", i)
		rc.VirtualHosts = append(rc.VirtualHosts, &routev3.VirtualHost{
			Name:    name,
			Domains: []string{name + ".ns.svc.cluster.local", name + ".ns.svc.cluster.local:8080"},
			Routes: []*routev3.Route{
				{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/api/"}}, Action: routeTo(name + "-api")},
				{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, Action: routeTo(name)},
			},
		})
	}
	rc.VirtualHosts = append(rc.VirtualHosts,
		&routev3.VirtualHost{Name: "wild", Domains: []string{"*.example.com"}, Routes: []*routev3.Route{
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, Action: routeTo("wild")},
		}},
		&routev3.VirtualHost{Name: "default", Domains: []string{"*"}, Routes: []*routev3.Route{
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, Action: routeTo("default")},
		}})
	return rc
}

// routeTo is a route action to cluster.
func routeTo(cluster string) *routev3.Route_Route {
	return &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}}
}

// BenchmarkMatchVirtualHosts matches the same requests (the first, a
// middle and the last host, a port variant, the wildcard and the
// catch-all) against tables of 10 and of 10,000 virtual hosts: the
// virtual host is found by domain in a map, so the cost should not grow
// with the table (issue #16: "route match cost unchanged").
func BenchmarkMatchVirtualHosts(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			table, err := Compile(manyHostsTable(n))
			if err != nil {
				b.Fatal(err)
			}
			none := staticHeaders{}
			reqs := []Request{
				{Host: "svc0.ns.svc.cluster.local", Path: "/api/x", Method: "GET", Headers: none},
				{Host: fmt.Sprintf("svc%d.ns.svc.cluster.local", n/2), Path: "/index.html", Method: "GET", Headers: none},
				{Host: fmt.Sprintf("svc%d.ns.svc.cluster.local:8080", n-1), Path: "/api/y", Method: "GET", Headers: none},
				{Host: "blog.example.com", Path: "/", Method: "GET", Headers: none},
				{Host: "unknown.test", Path: "/", Method: "GET", Headers: none},
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if table.MatchRequest(&reqs[i%len(reqs)]) == nil {
					b.Fatal("no route")
				}
			}
		})
	}
}

// typicalRoutesYAML is the 20 routes of the typical sidecar configuration
// of test/bench/h1count (BENCHMARKS.md, issue #19): five prefixes, five
// exact paths, five regexes, four catch-alls with an x-canary header
// matcher and the catch-all the benchmark's requests match.
var typicalRoutesYAML = func() string {
	var b strings.Builder
	b.WriteString("name: typical\nvirtual_hosts:\n- name: vh\n  domains: [\"*\"]\n  routes:\n")
	for i := range 5 {
		fmt.Fprintf(&b, "  - {match: {prefix: /api/v%d/}, route: {cluster: up}}\n", i+1)
		fmt.Fprintf(&b, "  - {match: {path: /static/asset-%d.js}, route: {cluster: up}}\n", i)
		fmt.Fprintf(&b, "  - {match: {safe_regex: {regex: \"/users/[0-9]+/orders/%d\"}}, route: {cluster: up}}\n", i)
		if i < 4 {
			fmt.Fprintf(&b, "  - {match: {prefix: /, headers: [{name: x-canary, string_match: {exact: \"v%d\"}}]}, route: {cluster: up}}\n", i)
		}
	}
	b.WriteString("  - {match: {prefix: /}, route: {cluster: last}}\n")
	return b.String()
}()

// BenchmarkMatchTypical matches the typical configuration's request (GET
// /, answered by the last of 20 routes) and one for an exact path: the
// route index tries the five routes that may match "/" instead of 20, and
// skips the regexes for "/static/...".
func BenchmarkMatchTypical(b *testing.B) {
	table := mustCompile(b, typicalRoutesYAML)
	h := staticHeaders{"user-agent": "bench", "x-request-id": "abc"}
	for _, path := range []string{"/", "/static/asset-4.js"} {
		b.Run(path, func(b *testing.B) {
			req := Request{Host: "sidecar", Path: path, Method: "GET", Headers: h}
			b.ReportAllocs()
			for b.Loop() {
				if table.MatchRequest(&req) == nil {
					b.Fatal("no route")
				}
			}
		})
	}
}
