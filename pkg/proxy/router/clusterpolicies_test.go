package router

import (
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

func TestCompileClusterPolicies(t *testing.T) {
	if p, err := CompileClusterPolicies(&httpv3.HttpProtocolOptions{}); p != nil || err != nil {
		t.Errorf("options without policies: %v, %v; want nil, nil", p, err)
	}
	p, err := CompileClusterPolicies(&httpv3.HttpProtocolOptions{
		RetryPolicy:           &routev3.RetryPolicy{RetryOn: "5xx,reset"},
		HashPolicy:            []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "x-user"}}}},
		RequestMirrorPolicies: []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: "shadow"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Retry == nil || p.Retry.RetryOn != RetryOn5xx|RetryOnReset || p.Retry.NumRetries != 1 {
		t.Errorf("retry policy %+v", p.Retry)
	}
	if p.Hash == nil || len(p.Mirrors) != 1 || p.Mirrors[0].Cluster != "shadow" {
		t.Errorf("hash %v, mirrors %v", p.Hash, p.Mirrors)
	}
	for _, tc := range []struct {
		name string
		opts *httpv3.HttpProtocolOptions
		want string
	}{
		{"retry_on", &httpv3.HttpProtocolOptions{RetryPolicy: &routev3.RetryPolicy{RetryOn: "5xx,sometimes"}}, "retry_policy.retry_on: "},
		{"mirror", &httpv3.HttpProtocolOptions{RequestMirrorPolicies: []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: "a"}, {}}}, "request_mirror_policies[1].cluster: "},
	} {
		_, err := CompileClusterPolicies(tc.opts)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error starting %q", tc.name, err, tc.want)
		}
	}
}
