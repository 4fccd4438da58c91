package router

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// FuzzCompile feeds arbitrary route configurations (JSON) to Compile, and
// every table that compiles to the request path: nothing may panic.
func FuzzCompile(f *testing.F) {
	for _, y := range []string{hostsYAML, pathsYAML, headersYAML, levelsYAML, benchYAML} {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(j), "/api/v1/x?debug=%41")
	}
	f.Add(`{"virtual_hosts":[{"name":"v","domains":["*"],"routes":[{"match":{"prefix":"/a","case_sensitive":false},"redirect":{"regex_rewrite":{"pattern":{"regex":"a"},"substitution":"\\0\\0"}}}]}]}`, "/A")
	f.Add(`{"virtual_hosts":[{"name":"v","domains":["*"],"routes":[{"match":{"path":"/"},"route":{"cluster":"c","prefix_rewrite":"/x"},"request_headers_to_add":[{"header":{"key":"k","value":"%START_TIME(%E*S)%"}}]}]}]}`, "/?q")
	f.Fuzz(func(t *testing.T, config, path string) {
		rc := &routev3.RouteConfiguration{}
		if protojson.Unmarshal([]byte(config), rc) != nil {
			return
		}
		table, err := Compile(rc)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		for _, host := range []string{"", "svc1.example.com", "A.B:80", "[::1]:9"} {
			req := &Request{Host: host, Path: path, Method: "GET", Headers: newHeaders("x-canary", "true")}
			r := table.MatchRequest(req)
			if r == nil {
				continue
			}
			_ = r.ClusterName(uint64(len(path)))
			_ = r.RewritePath(path)
			_ = r.RedirectLocation(req, nil)
			h := newHeaders("a", "1")
			r.MutateRequestHeaders(h, &accesslog.Entry{})
			r.MutateResponseHeaders(h, nil)
		}
	})
}
