package bootstrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// fullPB is the binary fixture, generated from full.yaml with -update.
const fullPB = "full.pb"

// TestBinaryFixture keeps testdata/full.pb in step with full.yaml: it is
// the deterministic binary encoding of what full.yaml loads to.
func TestBinaryFixture(t *testing.T) {
	b := loadFixture(t, "full.yaml")
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, fullPB, data)
}

func TestLoadFormats(t *testing.T) {
	want := loadFixture(t, "full.yaml")
	// Spot checks that the YAML itself was read as written, so that the
	// format comparisons below compare against the right thing.
	if got := want.GetNode().GetLocality().GetSubZone(); got != "rack-7" {
		t.Fatalf("full.yaml node.locality.sub_zone = %q, want rack-7", got)
	}
	if got := len(want.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()); got != 1 {
		t.Fatalf("full.yaml has %d network filters, want 1", got)
	}
	var hcm hcmv3.HttpConnectionManager
	tc := want.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig()
	if err := tc.UnmarshalTo(&hcm); err != nil {
		t.Fatalf("typed_config: %v", err)
	}
	if got := hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0].GetDirectResponse().GetBody().GetInlineString(); got != "hello\n" {
		t.Fatalf("direct_response body = %q", got)
	}

	yml, err := os.ReadFile(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		opts LoadOptions
	}{
		"yaml file":           {opts: LoadOptions{ConfigPath: "testdata/full.yaml"}},
		"yml extension":       {opts: LoadOptions{ConfigPath: writeTemp(t, "config.yml", yml)}},
		"upper-case yaml":     {opts: LoadOptions{ConfigPath: writeTemp(t, "CONFIG.YAML", yml)}},
		"json file":           {opts: LoadOptions{ConfigPath: "testdata/full.json"}},
		"text proto file":     {opts: LoadOptions{ConfigPath: "testdata/full.pb_text"}},
		"binary proto file":   {opts: LoadOptions{ConfigPath: filepath.Join("testdata", fullPB)}},
		"config-yaml alone":   {opts: LoadOptions{ConfigYAML: string(yml)}},
		"config-yaml as json": {opts: LoadOptions{ConfigYAML: mustRead(t, "testdata/full.json")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Load(tc.opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(want, got.Bootstrap, protocmp.Transform()); diff != "" {
				t.Errorf("bootstrap differs from full.yaml's (-want +got):\n%s", diff)
			}
			if len(got.UnknownFields) != 0 {
				t.Errorf("UnknownFields = %q, want none", got.UnknownFields)
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	tests := map[string]struct {
		opts LoadOptions
		// want is the whole error text, or its start when prefix is set
		// (the rest comes from a library).
		want   string
		prefix bool
		// partial: the only problems are unknown types, and Load also
		// returns the rest of the configuration, for Problems.
		partial bool
	}{
		"no configuration": {
			opts: LoadOptions{},
			want: "at least one of --config-path or --config-yaml should be non-empty",
		},
		"unsupported extension": {
			opts: LoadOptions{ConfigPath: "/etc/proxy/config.txt"},
			want: `unsupported configuration file extension ".txt" in "/etc/proxy/config.txt"; supported extensions are .yaml, .yml, .json, .pb (binary proto) and .pb_text (text proto)`,
		},
		"no extension": {
			opts: LoadOptions{ConfigPath: "/etc/proxy/config"},
			want: `configuration file "/etc/proxy/config" has no extension; supported extensions are .yaml, .yml, .json, .pb (binary proto) and .pb_text (text proto)`,
		},
		"unreadable file": {
			opts: LoadOptions{ConfigPath: missing},
			want: "read configuration: open " + missing + ": no such file or directory",
		},
		"unreadable file and a bad config-yaml": {
			opts: LoadOptions{ConfigPath: missing, ConfigYAML: "admin: {foo: 1}"},
			want: "read configuration: open " + missing + ": no such file or directory\n--config-yaml: admin.foo: unknown field",
		},
		"yaml syntax error": {
			opts:   LoadOptions{ConfigPath: writeTemp(t, "bad.yaml", []byte("admin:\n  address: [\n"))},
			want:   "yaml: line 2: did not find expected node content",
			prefix: true,
		},
		"yaml duplicate key": {
			opts:   LoadOptions{ConfigYAML: "node: {id: a}\nnode: {id: b}\n"},
			want:   "--config-yaml: yaml: unmarshal errors:\n  line 2: ",
			prefix: true,
		},
		"json syntax error": {
			opts:   LoadOptions{ConfigPath: writeTemp(t, "bad.json", []byte("{\n  \"admin\": {\n    \"address\" ]\n}\n"))},
			want:   "json: line 3, column 15: invalid character ']'",
			prefix: true,
		},
		"json truncated": {
			opts:   LoadOptions{ConfigPath: writeTemp(t, "short.json", []byte(`{"admin": {`))},
			want:   "json: unexpected end of input",
			prefix: true,
		},
		"json trailing data": {
			opts: LoadOptions{ConfigPath: writeTemp(t, "two.json", []byte("{}\n{}"))},
			want: "json: line 2, column 1: unexpected data after the top-level value",
		},
		"json not an object": {
			opts: LoadOptions{ConfigPath: writeTemp(t, "list.json", []byte(`[1, 2]`))},
			want: "the configuration must be an object, not a list",
		},
		"yaml not a mapping": {
			opts: LoadOptions{ConfigYAML: "just a string"},
			want: "--config-yaml: the configuration must be an object, not a string",
		},
		"text syntax error": {
			opts:   LoadOptions{ConfigPath: writeTemp(t, "bad.pb_text", []byte("node {\n  id: \"a\"\n"))},
			want:   "decode: proto: ",
			prefix: true,
		},
		"text bad value": {
			opts:   LoadOptions{ConfigPath: writeTemp(t, "bad.pb_text", []byte("admin { address { socket_address { port_value: \"x\" } } }"))},
			want:   "decode: proto: (line 1:48): invalid value for uint32",
			prefix: true,
		},
		"binary garbage": {
			opts:   LoadOptions{ConfigPath: writeTemp(t, "bad.pb", []byte{0x0a, 0xff})},
			want:   "decode: proto: ",
			prefix: true,
		},
		"wrong value types": {
			opts: LoadOptions{ConfigYAML: "node: {id: [1]}\nadmin: {address: 5}\nstatic_resources: {listeners: 5}\nstats_flush_interval: 1h2x\nlayered_runtime: {layers: [null]}"},
			want: strings.Join([]string{
				`--config-yaml: admin.address: expected an object, got a number`,
				`--config-yaml: layered_runtime.layers[0]: null is not allowed here`,
				`--config-yaml: node.id: invalid value [1] for a string field`,
				`--config-yaml: static_resources.listeners: expected an object, got a number`,
				`--config-yaml: stats_flush_interval: invalid value "1h2x" for a google.protobuf.Duration`,
			}, "\n"),
		},
		"yaml boolean for a string": {
			opts: LoadOptions{ConfigYAML: "node: {id: off}"},
			want: "--config-yaml: node.id: invalid value false for a string field (quote the value: YAML reads unquoted yes/no/on/off/y/n as booleans)",
		},
		"list elements of the wrong type": {
			opts: LoadOptions{ConfigYAML: `static_resources: {listeners: [{filter_chains: [{filters: [{typed_config: {"@type": ` + hcmURL + `, route_config: {virtual_hosts: [{domains: [1, {}, ok]}]}}}]}]}]}`},
			want: strings.Join([]string{
				`--config-yaml: static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].domains[0]: invalid value 1 for a string field`,
				`--config-yaml: static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].domains[1]: invalid value {} for a string field`,
			}, "\n"),
		},
		"map values": {
			opts: LoadOptions{ConfigYAML: `static_resources: {listeners: [{metadata: {filter_metadata: {good: {a: 1}, bad: 5, "with \"quote\"": [], gone: null}}}]}`},
			want: strings.Join([]string{
				`--config-yaml: static_resources.listeners[0].metadata.filter_metadata["bad"]: expected an object, got a number`,
				`--config-yaml: static_resources.listeners[0].metadata.filter_metadata["gone"]: null is not allowed here`,
				`--config-yaml: static_resources.listeners[0].metadata.filter_metadata["with \"quote\""]: expected an object, got a list`,
			}, "\n"),
		},
		"field given twice": {
			opts: LoadOptions{ConfigPath: writeTemp(t, "dup.json", []byte(`{"node": {"id": "a", "user_agent_name": "x", "userAgentName": "y"}}`))},
			want: `node.user_agent_name: given twice (as "userAgentName" and "user_agent_name")`,
		},
		"oneof given twice": {
			opts: LoadOptions{ConfigYAML: "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 1, named_port: http}}}"},
			want: "--config-yaml: admin.address.socket_address.port_value: only one field of port_specifier may be set, and named_port is set too",
		},
		"unknown enum value": {
			opts: LoadOptions{ConfigYAML: "static_resources: {listeners: [{traffic_direction: SIDEWAYS}]}"},
			want: `--config-yaml: static_resources.listeners[0].traffic_direction: unknown value "SIDEWAYS" for enum envoy.config.core.v3.TrafficDirection`,
		},
		"unknown typed_config type": {
			opts:    LoadOptions{ConfigYAML: `static_resources: {listeners: [{filter_chains: [{filters: [{typed_config: {"@type": type.googleapis.com/foo.Bar, x: 1}}]}]}]}`},
			want:    `--config-yaml: static_resources.listeners[0].filter_chains[0].filters[0].typed_config: unknown type "type.googleapis.com/foo.Bar"`,
			partial: true,
		},
		"typed_config without a type": {
			opts: LoadOptions{ConfigYAML: `admin: {access_log: [{typed_config: {path: /x}}]}`},
			want: `--config-yaml: admin.access_log[0].typed_config: missing "@type"`,
		},
		"unknown type in text format": {
			opts: LoadOptions{ConfigPath: writeTemp(t, "any.pb_text", []byte(`admin { access_log { typed_config { [type.googleapis.com/foo.Bar] { x: 1 } } } }`))},
			want: `admin.access_log[0].typed_config: unknown type "type.googleapis.com/foo.Bar"`,
		},
		"unknown type in binary": {
			opts: LoadOptions{ConfigPath: writeTemp(t, "any.pb", marshal(t, &bootstrapv3.Bootstrap{StaticResources: &bootstrapv3.Bootstrap_StaticResources{
				Listeners: []*listenerv3.Listener{{FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{
					{ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: rawAny("type.googleapis.com/foo.Bar", nil)}},
				}}}}},
			}}))},
			want: `static_resources.listeners[0].filter_chains[0].filters[0].typed_config: unknown type "type.googleapis.com/foo.Bar"`,
		},
		"undecodable typed_config bytes": {
			opts: LoadOptions{ConfigPath: writeTemp(t, "any.pb", marshal(t, &bootstrapv3.Bootstrap{Admin: &bootstrapv3.Admin{
				AccessLog: accessLogs(rawAny(extension.TypeURL(&hcmv3.HttpConnectionManager{}), []byte{0x0a, 0xff})),
			}}))},
			want:   "admin.access_log[0].typed_config: invalid envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager value: ",
			prefix: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := Load(tc.opts)
			if err == nil {
				t.Fatalf("Load succeeded (%v), want error %q", l.Bootstrap, tc.want)
			}
			if tc.partial != (l != nil) {
				t.Errorf("Load returned a partial result: %v, want %v", l != nil, tc.partial)
			}
			// protobuf randomly writes a non-breaking space after "proto:"
			// so that nobody depends on its exact messages.
			got := strings.ReplaceAll(err.Error(), "\u00a0", " ")
			if tc.prefix {
				if !strings.HasPrefix(got, tc.want) {
					t.Errorf("error = %q, want prefix %q", got, tc.want)
				}
				return
			}
			if got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestLoadEmpty: an empty document is an empty configuration, as {} is,
// whatever the format.
func TestLoadEmpty(t *testing.T) {
	tests := map[string]LoadOptions{
		"empty yaml file":     {ConfigPath: writeTemp(t, "empty.yaml", nil)},
		"empty json file":     {ConfigPath: writeTemp(t, "empty.json", []byte("  \n"))},
		"json null":           {ConfigPath: writeTemp(t, "null.json", []byte("null"))},
		"empty text file":     {ConfigPath: writeTemp(t, "empty.pb_text", []byte("# nothing\n"))},
		"empty binary file":   {ConfigPath: writeTemp(t, "empty.pb", nil)},
		"comment config-yaml": {ConfigYAML: "# nothing here\n"},
		"empty object":        {ConfigYAML: "{}"},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := Load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !proto.Equal(l.Bootstrap, &bootstrapv3.Bootstrap{}) {
				t.Errorf("Bootstrap = %v, want empty", l.Bootstrap)
			}
		})
	}
}

func TestLoadMerge(t *testing.T) {
	file := writeTemp(t, "base.yaml", []byte(`
node: {id: file-node, cluster: file-cluster, locality: {region: r1}}
admin:
  profile_path: /tmp/file.prof
  address: {socket_address: {address: 127.0.0.1, port_value: 9901}}
layered_runtime:
  layers: [{name: static, static_layer: {a: 1}}]
static_resources:
  listeners:
  - name: from-file
    address: {socket_address: {address: 127.0.0.1, port_value: 10000}}
`))
	tests := map[string]struct {
		yaml string
		want func(b *bootstrapv3.Bootstrap)
	}{
		"node override only": {
			// The example of Envoy's documentation: only node.id changes.
			yaml: "node: {id: node1}",
			want: func(b *bootstrapv3.Bootstrap) { b.Node.Id = "node1" },
		},
		"scalars override, sub-messages merge": {
			yaml: "admin: {address: {socket_address: {port_value: 9902}}}\nnode: {locality: {zone: z1}}",
			want: func(b *bootstrapv3.Bootstrap) {
				b.Admin.Address.GetSocketAddress().PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: 9902}
				b.Node.Locality.Zone = "z1"
			},
		},
		"repeated fields append": {
			yaml: "static_resources: {listeners: [{name: from-yaml}]}\nlayered_runtime: {layers: [{name: admin, admin_layer: {}}]}",
			want: func(b *bootstrapv3.Bootstrap) {
				b.StaticResources.Listeners = append(b.StaticResources.Listeners, &listenerv3.Listener{Name: "from-yaml"})
				b.LayeredRuntime.Layers = append(b.LayeredRuntime.Layers, &bootstrapv3.RuntimeLayer{
					Name:           "admin",
					LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}},
				})
			},
		},
		"oneof member replaces": {
			yaml: "admin: {address: {socket_address: {named_port: admin}}}",
			want: func(b *bootstrapv3.Bootstrap) {
				b.Admin.Address.GetSocketAddress().PortSpecifier = &corev3.SocketAddress_NamedPort{NamedPort: "admin"}
			},
		},
		"json accepted as config-yaml": {
			yaml: `{"admin": {"profilePath": "/tmp/yaml.prof"}}`,
			want: func(b *bootstrapv3.Bootstrap) { b.Admin.ProfilePath = "/tmp/yaml.prof" },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := loadFixtureAt(t, file)
			tc.want(want)
			got, err := Load(LoadOptions{ConfigPath: file, ConfigYAML: tc.yaml})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(want, got.Bootstrap, protocmp.Transform()); diff != "" {
				t.Errorf("merged bootstrap (-want +got):\n%s", diff)
			}
		})
	}
}

// loadFixtureAt loads a file that must load cleanly.
func loadFixtureAt(t *testing.T, path string) *bootstrapv3.Bootstrap {
	t.Helper()
	l, err := Load(LoadOptions{ConfigPath: path})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return l.Bootstrap
}

func TestLoadServiceOverrides(t *testing.T) {
	file := writeTemp(t, "node.yaml", []byte("node: {id: file-node, cluster: file-cluster, locality: {region: r1, zone: file-zone}}"))
	tests := map[string]struct {
		opts LoadOptions
		want *corev3.Node
	}{
		"no overrides": {
			opts: LoadOptions{ConfigPath: file},
			want: &corev3.Node{Id: "file-node", Cluster: "file-cluster", Locality: &corev3.Locality{Region: "r1", Zone: "file-zone"}},
		},
		"all three": {
			opts: LoadOptions{ConfigPath: file, ServiceCluster: "c", ServiceNode: "n", ServiceZone: "z"},
			want: &corev3.Node{Id: "n", Cluster: "c", Locality: &corev3.Locality{Region: "r1", Zone: "z"}},
		},
		"cluster only": {
			opts: LoadOptions{ConfigPath: file, ServiceCluster: "c"},
			want: &corev3.Node{Id: "file-node", Cluster: "c", Locality: &corev3.Locality{Region: "r1", Zone: "file-zone"}},
		},
		"overrides win over config-yaml": {
			opts: LoadOptions{ConfigPath: file, ConfigYAML: "node: {id: yaml-node}", ServiceNode: "n"},
			want: &corev3.Node{Id: "n", Cluster: "file-cluster", Locality: &corev3.Locality{Region: "r1", Zone: "file-zone"}},
		},
		"node created": {
			opts: LoadOptions{ConfigYAML: "{}", ServiceNode: "n"},
			want: &corev3.Node{Id: "n"},
		},
		"node and locality created": {
			opts: LoadOptions{ConfigYAML: "{}", ServiceZone: "z"},
			want: &corev3.Node{Locality: &corev3.Locality{Zone: "z"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := Load(tc.opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.want, l.Bootstrap.GetNode(), protocmp.Transform()); diff != "" {
				t.Errorf("node (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadBootstrapVersion(t *testing.T) {
	tests := map[string]struct {
		version int
		want    string // empty: accepted
	}{
		"unset": {version: 0},
		"v3":    {version: 3},
		"v2":    {version: 2, want: "bootstrap version 2 (the v2 API) is not supported; convert the configuration to the v3 API"},
		"v1":    {version: 1, want: "unknown bootstrap version 1; only version 3 (the v3 API) is supported"},
		"v4":    {version: 4, want: "unknown bootstrap version 4; only version 3 (the v3 API) is supported"},
		"minus": {version: -3, want: "unknown bootstrap version -3; only version 3 (the v3 API) is supported"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Load(LoadOptions{ConfigYAML: "node: {id: node-1}", BootstrapVersion: tc.version})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Load: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("Load error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestProblemsAroundUnknownTypes: an extension of an unknown type does not
// hide the configuration's other problems, its refusal quotes the table of
// extensions, and the placeholder that stands
// for it adds none of its own. The Redis proxy's type is linked into no
// binary of this package (validate_test.go links the Mongo proxy's).
func TestProblemsAroundUnknownTypes(t *testing.T) {
	yaml := `
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 10000}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: web
          route_config: {virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}]}
          http_filters:
          - {name: a, typed_config: {"@type": type.googleapis.com/no.such.Filter, foo: 1}}
          - {name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}
      - name: b
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.redis_proxy.v3.RedisProxy}
  clusters:
  - name: up
    connect_timeout: -1s
    load_assignment: {cluster_name: up}
`
	l, err := Load(LoadOptions{ConfigYAML: yaml})
	if err == nil || l == nil {
		t.Fatalf("Load = %v, %v; want a partial result and an error", l, err)
	}
	got := errorLines(l.Problems(builtin.Registry()))
	want := []string{
		`--config-yaml: static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config: unknown type "type.googleapis.com/no.such.Filter"; see docs/extensions.md`,
		`--config-yaml: static_resources.listeners[0].filter_chains[0].filters[1].typed_config: unknown type "type.googleapis.com/envoy.extensions.filters.network.redis_proxy.v3.RedisProxy"` +
			" (envoy.filters.network.redis_proxy: a protocol proxy Outrigger does not carry); see docs/extensions.md",
		"static_resources.clusters[0].connect_timeout: value must be greater than 0s",
		"static_resources.listeners[0].filter_chains[0].filters[0]: proxy.filters.network.http_connection_manager is a terminal filter and must be the last in the filter chain",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestUnknownTypeRefusedByConfiguredName: when an unlinked config type's
// package does not spell its extension's name (the UDP session filters
// live under udp_proxy.session), the refusal quotes the table of
// extensions for the name configured beside it.
func TestUnknownTypeRefusedByConfiguredName(t *testing.T) {
	yaml := `
static_resources:
  listeners:
  - name: u
    address: {socket_address: {protocol: UDP, address: 127.0.0.1, port_value: 10000}}
    listener_filters:
    - name: envoy.filters.udp_listener.udp_proxy
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig
        stat_prefix: u
        matcher: {on_no_match: {action: {name: route, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route, cluster: c}}}}
        session_filters:
        - name: envoy.filters.udp.session.dynamic_forward_proxy
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.session.dynamic_forward_proxy.v3.FilterConfig, stat_prefix: d}
        - name: my.own.name
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.session.dynamic_forward_proxy.v3.FilterConfig}
  clusters:
  - name: c
    load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 10001}}}}]}]}
`
	l, err := Load(LoadOptions{ConfigYAML: yaml})
	if err == nil || l == nil {
		t.Fatalf("Load = %v, %v; want a partial result and an error", l, err)
	}
	got := errorLines(l.Problems(builtin.Registry()))
	const unknown = `unknown type "type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.session.dynamic_forward_proxy.v3.FilterConfig"`
	want := []string{
		`--config-yaml: static_resources.listeners[0].listener_filters[0].typed_config.session_filters[0].typed_config: ` + unknown +
			" (envoy.filters.udp.session.dynamic_forward_proxy: " + builtin.Registry().Unsupported()["filters.udp.session.dynamic_forward_proxy"] + "); see docs/extensions.md",
		`--config-yaml: static_resources.listeners[0].listener_filters[0].typed_config.session_filters[1].typed_config: ` + unknown + "; see docs/extensions.md",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
