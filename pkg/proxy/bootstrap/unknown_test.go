package bootstrap

import (
	"slices"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
)

// The same configuration, with the same unknown fields (nested, in a list,
// inside a typed_config and inside a typed_config nested in another), in
// each format. Without the unknown fields it is cleanConfig.
const (
	unknownYAML = `
admin:
  foo: 1
  address: {socket_address: {address: 127.0.0.1, port_value: 9901, bar: {x: [1, 2]}}}
static_resources:
  listeners:
  - name: l0
    bar: true
  - name: l1
    filter_chains:
    - filters:
      - name: hcm
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: http
          baz: 1
          http_filters:
          - name: router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
              qux: [1]
`
	unknownJSON = `{
  "admin": {
    "foo": 1,
    "address": {"socketAddress": {"address": "127.0.0.1", "portValue": 9901, "bar": {"x": [1, 2]}}}
  },
  "staticResources": {
    "listeners": [
      {"name": "l0", "bar": true},
      {"name": "l1", "filterChains": [{"filters": [{"name": "hcm", "typedConfig": {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "statPrefix": "http",
        "baz": 1,
        "httpFilters": [{"name": "router", "typedConfig": {
          "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
          "qux": [1]
        }}]
      }}]}]}
    ]
  }
}`
	unknownText = `
admin {
  foo: 1
  address { socket_address { address: "127.0.0.1" port_value: 9901 bar { x: [1, 2] } } }
}
static_resources {
  listeners { name: "l0" bar: true }
  listeners {
    name: "l1"
    filter_chains {
      filters {
        name: "hcm"
        typed_config {
          [type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager] {
            stat_prefix: "http"
            baz: 1
            http_filters {
              name: "router"
              typed_config {
                [type.googleapis.com/envoy.extensions.filters.http.router.v3.Router] { qux: [1] }
              }
            }
          }
        }
      }
    }
  }
}
`
)

// unknownPaths are the paths every format reports (binary names fields by
// number, so it has its own list).
var unknownPaths = []string{
	"admin.address.socket_address.bar",
	"admin.foo",
	"static_resources.listeners[0].bar",
	"static_resources.listeners[1].filter_chains[0].filters[0].typed_config.baz",
	"static_resources.listeners[1].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config.qux",
}

// cleanConfig is the configuration above without its unknown fields.
func cleanConfig(t *testing.T) *bootstrapv3.Bootstrap {
	t.Helper()
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		t.Fatal(err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "http",
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &bootstrapv3.Bootstrap{
		Admin: &bootstrapv3.Admin{Address: socketAddress("127.0.0.1", 9901)},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{Listeners: []*listenerv3.Listener{
			{Name: "l0"},
			{Name: "l1", FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
				Name:       "hcm",
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
			}}}}},
		}},
	}
}

func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// unknownBinary encodes cleanConfig with unknown fields added at the same
// places as in the other formats (numbers 900 and up are unused).
func unknownBinary(t *testing.T) []byte {
	t.Helper()
	b := cleanConfig(t)
	addUnknown(b.Admin.ProtoReflect(), 901)
	addUnknown(b.Admin.Address.GetSocketAddress().ProtoReflect(), 902)
	addUnknown(b.StaticResources.Listeners[0].ProtoReflect(), 903)

	filter := b.StaticResources.Listeners[1].FilterChains[0].Filters[0]
	var hcm hcmv3.HttpConnectionManager
	if err := filter.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	router := hcm.HttpFilters[0].GetTypedConfig()
	router.Value = protowire.AppendVarint(protowire.AppendTag(router.Value, 905, protowire.VarintType), 1)
	addUnknown(hcm.ProtoReflect(), 904)
	filter.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: rawAny(filter.GetTypedConfig().GetTypeUrl(), marshal(t, &hcm))}
	return marshal(t, b)
}

// addUnknown appends an unknown varint field to m.
func addUnknown(m protoreflect.Message, num protowire.Number) {
	raw := protowire.AppendTag(m.GetUnknown(), num, protowire.VarintType)
	m.SetUnknown(protowire.AppendVarint(raw, 7))
}

func TestUnknownFields(t *testing.T) {
	binaryPaths := []string{
		"admin.901",
		"admin.address.socket_address.902",
		"static_resources.listeners[0].903",
		"static_resources.listeners[1].filter_chains[0].filters[0].typed_config.904",
		"static_resources.listeners[1].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config.905",
	}
	tests := map[string]struct {
		file    string
		content []byte
		yaml    string
		paths   []string
		// prefix is what Load puts before each error of this source.
		prefix string
	}{
		"yaml file":    {file: "c.yaml", content: []byte(unknownYAML), paths: unknownPaths},
		"json file":    {file: "c.json", content: []byte(unknownJSON), paths: unknownPaths},
		"text file":    {file: "c.pb_text", content: []byte(unknownText), paths: unknownPaths},
		"binary file":  {file: "c.pb", content: unknownBinary(t), paths: binaryPaths},
		"config-yaml":  {yaml: unknownYAML, paths: unknownPaths, prefix: "--config-yaml: "},
		"json as yaml": {yaml: unknownJSON, paths: unknownPaths, prefix: "--config-yaml: "},
	}
	for name, tc := range tests {
		opts := LoadOptions{ConfigYAML: tc.yaml}
		if tc.file != "" {
			opts.ConfigPath = writeTemp(t, tc.file, tc.content)
		}
		t.Run(name+"/rejected", func(t *testing.T) {
			l, err := Load(opts)
			if err == nil {
				t.Fatalf("Load succeeded with unknown fields %q", l.UnknownFields)
			}
			var want []string
			for _, p := range tc.paths {
				want = append(want, tc.prefix+p+": unknown field")
			}
			if diff := cmp.Diff(want, sorted(errorLines(err))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
		t.Run(name+"/allowed", func(t *testing.T) {
			opts := opts
			opts.AllowUnknownStaticFields = true
			l, err := Load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.paths, sorted(l.UnknownFields)); diff != "" {
				t.Errorf("UnknownFields (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(cleanConfig(t), l.Bootstrap, protocmp.Transform()); diff != "" {
				t.Errorf("unknown fields were not all dropped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnknownFieldsBothSources: the paths of both sources are listed, each
// once.
func TestUnknownFieldsBothSources(t *testing.T) {
	file := writeTemp(t, "c.yaml", []byte("admin: {foo: 1, bar: 2}"))
	l, err := Load(LoadOptions{
		ConfigPath:               file,
		ConfigYAML:               "admin: {foo: 3, baz: 4}",
		AllowUnknownStaticFields: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"admin.bar", "admin.foo", "admin.baz"}
	if diff := cmp.Diff(want, l.UnknownFields); diff != "" {
		t.Errorf("UnknownFields (-want +got):\n%s", diff)
	}
}

// TestUnknownEnumValueAllowed: protojson drops unknown enum names with the
// unknown fields, so they are listed with them.
func TestUnknownEnumValueAllowed(t *testing.T) {
	l, err := Load(LoadOptions{
		ConfigYAML:               "static_resources: {listeners: [{name: l, traffic_direction: SIDEWAYS}]}",
		AllowUnknownStaticFields: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"static_resources.listeners[0].traffic_direction"}, l.UnknownFields); diff != "" {
		t.Errorf("UnknownFields (-want +got):\n%s", diff)
	}
	want := &bootstrapv3.Bootstrap{StaticResources: &bootstrapv3.Bootstrap_StaticResources{
		Listeners: []*listenerv3.Listener{{Name: "l"}},
	}}
	if !proto.Equal(want, l.Bootstrap) {
		t.Errorf("Bootstrap = %v, want %v", l.Bootstrap, want)
	}
}

func sorted(s []string) []string {
	return slices.Sorted(slices.Values(s))
}
