package httpfilter_test

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

func typed(t *testing.T, name string, m proto.Message) *hcmv3.HttpFilter {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}
}

// TestCompileUpstream checks the shape of an upstream chain: empty is
// none, the codec ends it, and what Outrigger cannot run upstream is
// refused with its path.
func TestCompileUpstream(t *testing.T) {
	ctx := httpfilter.Context{Extensions: builtin.Registry(), LookupByName: true}
	codec := typed(t, "codec", &upstreamcodecv3.UpstreamCodec{})
	mutation := typed(t, "m", &headermutationv3.HeaderMutation{})
	byName := &hcmv3.HttpFilter{Name: "envoy.filters.http.upstream_codec"}
	disabled := typed(t, "m", &headermutationv3.HeaderMutation{})
	disabled.Disabled = true
	discovery := &hcmv3.HttpFilter{Name: "d", ConfigType: &hcmv3.HttpFilter_ConfigDiscovery{ConfigDiscovery: &corev3.ExtensionConfigSource{}}}

	if c, err := httpfilter.CompileUpstream("f", nil, ctx); c != nil || err != nil {
		t.Errorf("empty list: %v, %v", c, err)
	}
	c, err := httpfilter.CompileUpstream("f", []*hcmv3.HttpFilter{mutation, byName}, ctx)
	if err != nil || len(c.Filters) != 1 || c.Filters[0].Name != "m" {
		t.Fatalf("mutation then codec: %+v, %v", c, err)
	}
	buffer := typed(t, "b", &bufferv3.Buffer{MaxRequestBytes: wrapperspb.UInt32(10)})
	c, err = httpfilter.CompileUpstream("f", []*hcmv3.HttpFilter{buffer, mutation, codec}, ctx)
	if err != nil || len(c.Filters) != 2 || c.Filters[0].Name != "b" {
		t.Fatalf("buffer, mutation then codec: %+v, %v", c, err)
	}
	for name, tc := range map[string]struct {
		list []*hcmv3.HttpFilter
		want string
	}{
		"no codec":         {[]*hcmv3.HttpFilter{mutation}, "f[0]: the last upstream HTTP filter must be envoy.filters.http.upstream_codec"},
		"codec not last":   {[]*hcmv3.HttpFilter{codec, mutation}, "f[0]: upstream_codec is terminal"},
		"disabled":         {[]*hcmv3.HttpFilter{disabled, codec}, "f[0].disabled: not supported"},
		"config_discovery": {[]*hcmv3.HttpFilter{discovery, codec}, "f[0].config_discovery: not supported"},
		"bad buffer":       {[]*hcmv3.HttpFilter{typed(t, "b", &bufferv3.Buffer{}), codec}, "f[0].typed_config.max_request_bytes: must be set"},
		"router upstream":  {[]*hcmv3.HttpFilter{{Name: "envoy.filters.http.router"}, codec}, `f[0].typed_config: filter "proxy.filters.http.router" cannot run as an upstream HTTP filter`},
	} {
		if _, err := httpfilter.CompileUpstream("f", tc.list, ctx); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
	}
}
