package zipkin

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestSplitCollectorURI: collector_service's uri is split as Envoy splits
// it: a scheme gives a host and a path ("/" when none), no scheme a path.
func TestSplitCollectorURI(t *testing.T) {
	for uri, want := range map[string][2]string{
		"https://zipkin.example.com/api/v2/spans": {"zipkin.example.com", "/api/v2/spans"},
		"http://zipkin:9411/api/v2/spans?x=1":     {"zipkin:9411", "/api/v2/spans?x=1"},
		"http://zipkin.example.com":               {"zipkin.example.com", "/"},
		"/api/v2/spans":                           {"", "/api/v2/spans"},
	} {
		host, path := splitCollectorURI(uri)
		if host != want[0] || path != want[1] {
			t.Errorf("splitCollectorURI(%q) = %q, %q; want %q, %q", uri, host, path, want[0], want[1])
		}
	}
}

// TestCollectorServiceErrors: a collector_service missing its cluster or
// uri, naming an unknown cluster, or with a header Outrigger does not
// take, is refused with its path.
func TestCollectorServiceErrors(t *testing.T) {
	service := func(uri, cluster string, headers ...*corev3.HeaderValueOption) *tracev3.ZipkinConfig {
		return &tracev3.ZipkinConfig{CollectorService: &corev3.HttpService{
			HttpUri:             &corev3.HttpUri{Uri: uri, HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster}},
			RequestHeadersToAdd: headers,
		}}
	}
	tests := map[string]struct {
		cfg  *tracev3.ZipkinConfig
		want string
	}{
		"no cluster":      {service("/api/v2/spans", ""), "collector_service.http_uri.cluster: must be set"},
		"no uri":          {service("", "zipkin"), "collector_service.http_uri.uri: must be set"},
		"unknown cluster": {service("/api/v2/spans", "zipkin"), "collector_service.http_uri.cluster: envoy.tracers.zipkin: unknown cluster 'zipkin'"},
		"header without key": {
			service("/api/v2/spans", "zipkin", &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Value: "v"}}),
			"collector_service.request_headers_to_add[0].header.key: must be set",
		},
		"neither": {&tracev3.ZipkinConfig{}, "collector_cluster: must be set (or collector_service)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.cfg, tracing.Context{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile = %v; want %q", err, tc.want)
			}
		})
	}
}
