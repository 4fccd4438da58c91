package router

import (
	"fmt"
	"strings"
	"testing"
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
