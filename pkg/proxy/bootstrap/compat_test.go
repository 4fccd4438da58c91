package bootstrap

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
)

// compatListener is a listener whose connection manager has the given
// codec_type value and http_filters (YAML flow sequence content).
func compatListener(codec, filters string) string {
	return `
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: hcm
        typed_config:
          "@type": ` + hcmURL + `
          stat_prefix: x
          codec_type: ` + codec + `
          route_config: {virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}]}
          http_filters: [` + filters + `]
`
}

// TestEnumNamesInAnyCase checks that enum values in another case load as
// Envoy's YAML loader reads them: round_robin is ROUND_ROBIN.
func TestEnumNamesInAnyCase(t *testing.T) {
	yaml := compatListener("auto", routerFilter) + `
  clusters:
  - name: c
    type: static
    lb_policy: round_robin
    dns_lookup_family: v4_only
`
	loadInBothForms(t, yaml, func(t *testing.T, l *Loaded) {
		c := l.Bootstrap.GetStaticResources().GetClusters()[0]
		if c.GetType() != clusterv3.Cluster_STATIC || c.GetLbPolicy() != clusterv3.Cluster_ROUND_ROBIN || c.GetDnsLookupFamily() != clusterv3.Cluster_V4_ONLY {
			t.Errorf("cluster %v %v %v", c.GetType(), c.GetLbPolicy(), c.GetDnsLookupFamily())
		}
		var hcm hcmv3.HttpConnectionManager
		if err := l.Bootstrap.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		if hcm.GetCodecType() != hcmv3.HttpConnectionManager_AUTO {
			t.Errorf("codec_type %v, want AUTO", hcm.GetCodecType())
		}
	})
	if _, err := Load(LoadOptions{ConfigYAML: compatListener("sideways", routerFilter)}); err == nil || !strings.Contains(err.Error(), `unknown value "sideways"`) {
		t.Errorf("an enum value of no case loaded: %v", err)
	}
}

// TestTypedStruct checks that a configuration written as a TypedStruct (of
// either package) loads as the message it stands for, and that its fields
// are checked with their paths.
func TestTypedStruct(t *testing.T) {
	const hcURL = "type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck"
	tests := map[string]struct {
		structURL, value string
		wantErr          string
	}{
		"udpa":             {structURL: "type.googleapis.com/udpa.type.v1.TypedStruct", value: "{pass_through_mode: true}"},
		"xds":              {structURL: "type.googleapis.com/xds.type.v3.TypedStruct", value: "{pass_through_mode: false}"},
		"an unknown field": {structURL: "type.googleapis.com/xds.type.v3.TypedStruct", value: "{pass_through_mode: true, colour: red}", wantErr: "http_filters[0].typed_config.value.colour: unknown field"},
		"a wrong value":    {structURL: "type.googleapis.com/udpa.type.v1.TypedStruct", value: "{pass_through_mode: maybe}", wantErr: "http_filters[0].typed_config.value.pass_through_mode: invalid value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			filter := `{name: hc, typed_config: {"@type": ` + tc.structURL + `, type_url: ` + hcURL + `, value: ` + tc.value + `}}, ` + routerFilter
			l, err := Load(LoadOptions{ConfigYAML: compatListener("AUTO", filter)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(l.Bootstrap, builtin.Registry()); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			var hcm hcmv3.HttpConnectionManager
			if err := l.Bootstrap.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
				t.Fatal(err)
			}
			var hc healthcheckv3.HealthCheck
			tcfg := hcm.GetHttpFilters()[0].GetTypedConfig()
			if err := tcfg.UnmarshalTo(&hc); err != nil {
				t.Fatalf("the filter's config is %s: %v", tcfg.GetTypeUrl(), err)
			}
			if want := strings.Contains(tc.value, "true"); hc.GetPassThroughMode().GetValue() != want {
				t.Errorf("pass_through_mode %v, want %v", hc.GetPassThroughMode().GetValue(), want)
			}
		})
	}
	t.Run("an unknown type", func(t *testing.T) {
		filter := `{name: hc, typed_config: {"@type": type.googleapis.com/xds.type.v3.TypedStruct, type_url: type.googleapis.com/no.such.Type, value: {}}}, ` + routerFilter
		_, err := Load(LoadOptions{ConfigYAML: compatListener("AUTO", filter)})
		if err == nil || !strings.Contains(err.Error(), `http_filters[0].typed_config.type_url: unknown type "type.googleapis.com/no.such.Type"`) {
			t.Errorf("error %v", err)
		}
	})
}

// toJSON converts a YAML test configuration to JSON.
func toJSON(t *testing.T, y string) string {
	t.Helper()
	js, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// TestSingleElementForList checks that a single value where a list is
// expected loads as a list of one, as protobuf's JSON parser reads it for
// Envoy (its legacy syntax: Envoy's single-page-app sandbox gives oauth2's
// pass_through_matcher that way), inside an Any as well as at the top, and
// that a bad element is still reported at the field's path.
func TestSingleElementForList(t *testing.T) {
	yaml := strings.Replace(compatListener("AUTO", routerFilter), `domains: ["*"]`, `domains: "*"`, 1) + `
  clusters:
    name: c
    type: STATIC
`
	loadInBothForms(t, yaml, func(t *testing.T, l *Loaded) {
		if cs := l.Bootstrap.GetStaticResources().GetClusters(); len(cs) != 1 || cs[0].GetName() != "c" {
			t.Errorf("clusters = %v, want the one cluster c", cs)
		}
		var hcm hcmv3.HttpConnectionManager
		if err := l.Bootstrap.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		if d := hcm.GetRouteConfig().GetVirtualHosts()[0].GetDomains(); len(d) != 1 || d[0] != "*" {
			t.Errorf("domains = %q, want [*]", d)
		}
	})
	bad := strings.Replace(compatListener("AUTO", routerFilter), `domains: ["*"]`, `domains: 7`, 1)
	if _, err := Load(LoadOptions{ConfigYAML: bad}); err == nil ||
		!strings.Contains(err.Error(), `route_config.virtual_hosts[0].domains: invalid value 7 for a string field`) {
		t.Errorf("a bad single element: %v", err)
	}
}

// loadInBothForms loads yaml, and the same configuration as JSON, and
// hands each result to check in a subtest of its own.
func loadInBothForms(t *testing.T, yaml string, check func(*testing.T, *Loaded)) {
	t.Helper()
	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			src := yaml
			if format == "json" {
				src = toJSON(t, yaml)
			}
			l, err := Load(LoadOptions{ConfigYAML: src})
			if err != nil {
				t.Fatal(err)
			}
			check(t, l)
		})
	}
}
