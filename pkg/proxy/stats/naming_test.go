package stats

import (
	"bytes"
	"strings"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
)

func TestParseNaming(t *testing.T) {
	for in, want := range map[string]Naming{"proxy": NamingProxy, "envoy": NamingEnvoy} {
		got, err := ParseNaming(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseNaming(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Envoy", "prometheus"} {
		if _, err := ParseNaming(in); err == nil || !strings.Contains(err.Error(), "want proxy or envoy") {
			t.Errorf("ParseNaming(%q): error %v", in, err)
		}
	}
}

// TestRenderNaming renders the same store in both namings: the prefix,
// the labels of default and configured tags of both spellings, a custom
// tag name, and the stat names that carry the product's word.
func TestRenderNaming(t *testing.T) {
	s, err := NewStoreWithConfig(&metricsv3.StatsConfig{StatsTags: []*metricsv3.TagSpecifier{
		{TagName: "envoy.team", TagValue: &metricsv3.TagSpecifier_FixedValue{FixedValue: "edge"}},
		{TagName: "zone", TagValue: &metricsv3.TagSpecifier_FixedValue{FixedValue: "eu"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Counter("cluster.c1.upstream_rq_200").Add(2)
	s.Counter("server.proxy_bug_failures")
	s.Counter("server.proxy_notifications")
	cases := map[Naming][]string{
		NamingProxy: {
			`proxy_cluster_upstream_rq{proxy_team="edge",zone="eu",proxy_response_code="200",proxy_cluster_name="c1"} 2`,
			`proxy_server_proxy_bug_failures{proxy_team="edge",zone="eu"} 0`,
			`proxy_server_proxy_notifications{proxy_team="edge",zone="eu"} 0`,
		},
		NamingEnvoy: {
			`envoy_cluster_upstream_rq{envoy_team="edge",zone="eu",envoy_response_code="200",envoy_cluster_name="c1"} 2`,
			`envoy_server_envoy_bug_failures{envoy_team="edge",zone="eu"} 0`,
			`envoy_server_envoy_notifications{envoy_team="edge",zone="eu"} 0`,
		},
	}
	for naming, want := range cases {
		var b bytes.Buffer
		if err := RenderPrometheus(&b, s, RenderOptions{Naming: naming}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, line := range want {
			if !strings.Contains(out, line+"\n") {
				t.Errorf("%v naming: no line %q in\n%s", naming, line, out)
			}
		}
		other := NamingEnvoy
		if naming == NamingEnvoy {
			other = NamingProxy
		}
		if strings.Contains(out, other.String()+"_") {
			t.Errorf("%v naming: output carries %s_:\n%s", naming, other, out)
		}
		if err := checkExposition(out); err != nil {
			t.Errorf("%v naming: %v", naming, err)
		}
	}
}
