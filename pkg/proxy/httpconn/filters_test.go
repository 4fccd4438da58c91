package httpconn

import (
	"strings"
	"testing"

	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// TestBuildFilters checks how http_filters are resolved in the registry:
// by the type of typed_config, or by name without one (unless the runtime
// guard forbids it), the router last.
func TestBuildFilters(t *testing.T) {
	named := func(names ...string) []*hcmv3.HttpFilter {
		var fs []*hcmv3.HttpFilter
		for _, n := range names {
			fs = append(fs, &hcmv3.HttpFilter{Name: n})
		}
		return fs
	}
	emptyAny := []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: &anypb.Any{}}}}
	other, _ := anypb.New(&emptypb.Empty{})
	tests := map[string]struct {
		filters []*hcmv3.HttpFilter
		rt      RuntimeValues
		want    string // an error part; empty: no error
		chain   int    // filters before the router
	}{
		"the router by name":                {filters: named("envoy.filters.http.router")},
		"the other spelling":                {filters: named("proxy.filters.http.router")},
		"typed_config: {} is by name":       {filters: emptyAny},
		"a filter by name, then the router": {filters: append([]*hcmv3.HttpFilter{hcFilter(t)}, named("envoy.filters.http.router")...), chain: 1},
		"an empty health_check by name": {filters: named("envoy.filters.http.health_check", "envoy.filters.http.router"),
			want: "http_filters[0].typed_config.pass_through_mode: must be set"},
		"an unknown name": {filters: named("envoy.filters.http.gzip", "envoy.filters.http.router"),
			want: `http_filters[0].name: filter "envoy.filters.http.gzip" without typed_config is not supported by Outrigger`},
		"the guard forbids names": {filters: named("envoy.filters.http.router"), rt: fixedRuntime{"envoy.reloadable_features.no_extension_lookup_by_name": 1},
			want: "http_filters[0].typed_config: Didn't find a registered implementation for 'envoy.filters.http.router' with type URL: ''"},
		"the guard in the proxy spelling": {filters: named("envoy.filters.http.router"), rt: fixedRuntime{"proxy.reloadable_features.no_extension_lookup_by_name": 1},
			want: "Didn't find a registered implementation"},
		"the proxy spelling wins": {filters: named("envoy.filters.http.router"), rt: fixedRuntime{"envoy.reloadable_features.no_extension_lookup_by_name": 1, "proxy.reloadable_features.no_extension_lookup_by_name": 0}},
		"a type that is not a filter": {filters: []*hcmv3.HttpFilter{{Name: "x", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: other}}},
			want: "http_filters[0].typed_config: filter type google.protobuf.Empty is not supported by Outrigger"},
		"the router not last": {filters: named("envoy.filters.http.router", "envoy.filters.http.router"),
			want: "http_filters[0]: the router filter is terminal and must be the last filter"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fc, err := buildFilters("http_filters", tc.filters, builtin.Registry(), httpfilter.Context{}, tc.rt)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("buildFilters: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			case tc.want == "" && len(fc.filters) != tc.chain:
				t.Errorf("%d filters before the router, want %d", len(fc.filters), tc.chain)
			}
		})
	}
	t.Run("a disabled extension", func(t *testing.T) {
		reg := builtin.Registry()
		if _, err := reg.Disable([]string{"envoy.filters.http/envoy.filters.http.health_check"}); err != nil {
			t.Fatal(err)
		}
		_, err := buildFilters("http_filters", []*hcmv3.HttpFilter{hcFilter(t), {Name: "envoy.filters.http.router"}}, reg, httpfilter.Context{}, nil)
		if err == nil || !strings.Contains(err.Error(), "is disabled by --disable-extensions") {
			t.Errorf("error %v", err)
		}
	})
}

// hcFilter is a configured health_check filter.
func hcFilter(t *testing.T) *hcmv3.HttpFilter {
	t.Helper()
	return filter("envoy.filters.http.health_check", &healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(false)})
}
